"""Validation against on-board measurements: suites of sample kernels with the figures a board
measured for them (``suite.py``), run and compared by ``aicore-sim validate``."""
