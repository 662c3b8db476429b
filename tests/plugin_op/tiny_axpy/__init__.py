"""``tiny_axpy``: z = alpha * x + y, a minimal operator plug-in for aicore-sim."""
