"""Ports of Huawei's Ascend C best-practice sample kernels, with the on-board figures their
READMEs print, as a validation suite (``suite.SUITE``, entry point ``aicore_sim.validation``).

Provenance of every port here: github.com/cannmirror/asc-devkit (mirror of
gitcode.com/cann/asc-devkit), commit ``0da921b91aeb2abdc6e8d74423b0bbe7040c3fd1``; each
module names its upstream file(s). Our own Python from a side-by-side reading of the upstream
files: class, method, member and local names, the statement order and every SetFlag /
WaitFlag / PipeBarrier follow upstream so the two can be compared by eye; comments are ours.
"""
