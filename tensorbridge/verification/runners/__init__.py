"""Runtimes that execute a model for verification: one module per framework.

A runner has `inputs` [(name, dtype, shape)], `outputs` [names], and `run(feeds) -> dict`; one that
can tell which float outputs are dequantized per tensor has `output_steps() -> {name: scale}`.
"""
