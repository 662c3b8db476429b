"""The simulator core: platform, ISA, memory, semantics, the record pass and its replay
(``engine/``), the trace and the costs. Imports only itself and :mod:`aicore_sim.util`."""
