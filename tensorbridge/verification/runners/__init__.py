"""Runtimes that execute a model for verification: one module per framework.

A runner has `inputs` [(name, dtype, shape)], `outputs` [names], and `run(feeds) -> dict`.
"""
