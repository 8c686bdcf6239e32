"""Runs a Core ML model the only way this machine can: Core ML itself runs only on Apple platforms, so the
file is read back into the IR (frontends/coreml, coremltools' protobuf modules) and the reference interpreter
runs that. It proves the file holds the computation as tensorbridge reads Core ML's op definitions; it is not
a run in Core ML, and `verify` says so in its report.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.verification.runners.reference import ReferenceRunner


class CoreMLRunner(ReferenceRunner):
    name = "reference interpreter on the Core ML file read back"
    note = ("Core ML runs only on Apple platforms: the Core ML file was read back and run by tensorbridge's "
            "reference interpreter (not a run in Core ML)")

    def __init__(self, source, **_options):
        from tensorbridge.frontends.coreml.importer import load

        super().__init__(load(source))

    def run(self, feeds, intermediates: bool = False):
        """Integer feeds are given as Core ML takes them (int32, its only integer type), when they fit."""
        dtypes = {name: dtype for name, dtype, _ in self.inputs}
        cast = {}
        for name, value in feeds.items():
            value = np.asarray(value)
            want = dtypes.get(name)
            if want is not None and value.dtype != want and value.dtype.kind in "iu" and np.dtype(want).kind == "i":
                if value.size and (value.min() < -2**31 or value.max() >= 2**31):
                    raise ValueError(f"input {name} holds values beyond int32, Core ML's only integer type")
                value = value.astype(want)
            cast[name] = value
        return super().run(cast, intermediates=intermediates)
