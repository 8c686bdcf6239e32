"""Seeded arrays for the per-op tests of the TensorFlow-family frontends."""

from __future__ import annotations

import numpy as np


class Seeded:
    """Arrays drawn from one seeded generator, in the order a case table asks for them."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    def floats(self, *shape) -> np.ndarray:
        return self.rng.standard_normal(shape).astype(np.float32)

    def ints(self, low, high, *shape, dtype=np.int32) -> np.ndarray:
        return self.rng.integers(low, high, shape).astype(dtype)

    def boxes(self, n: int) -> np.ndarray:
        """[n, 4] boxes as [y1, x1, y2, x2] that overlap each other, every third given by its other diagonal."""
        start = self.rng.uniform(0, 1, (n, 2))
        out = np.concatenate([start, start + self.rng.uniform(0.1, 0.5, (n, 2))], axis=1)
        out[::3] = out[::3][:, [2, 3, 0, 1]]
        return out.astype(np.float32)

    def distinct_scores(self, n: int) -> np.ndarray:
        """[n] scores in [0, 1) without ties (which order NMS's candidates as the implementation's sort does)."""
        return (self.rng.permutation(n) / n).astype(np.float32)


def litert_outputs(path, inputs) -> dict[str, np.ndarray]:
    """The outputs LiteRT computes for the .tflite file at `path` on `inputs` (in its inputs' order), by name in its
    outputs' order."""
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path))
    interpreter.allocate_tensors()
    for detail, a in zip(interpreter.get_input_details(), inputs):
        interpreter.set_tensor(detail["index"], a)
    interpreter.invoke()
    return {d["name"]: interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()}
