"""``my_op``: y = x * scale on the simulated AIV (template of an aicore-sim operator package)."""
