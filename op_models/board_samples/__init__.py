"""Ports of Huawei's Ascend C best-practice sample kernels, with the on-board figures their
READMEs print, as a validation suite (``suite.SUITE``, entry point ``aicore_sim.validation``)."""
