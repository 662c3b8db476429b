"""MoE operators of ops-transformer run from their own sources (host tiling, infershape and
kernel C++ through :class:`aicore_sim.cfront.source_op.SourceOpModel`): each module here is
one operator's contract only - its IR as the operator's documentation states it, bundled cases
at a small and a real-model size, and an independent numpy golden written from the
documentation's formulas (nothing of upstream is copied). The sources come from ``--op-src``
or ``$AICORE_SIM_OPS_TRANSFORMER/moe/<op>``."""
