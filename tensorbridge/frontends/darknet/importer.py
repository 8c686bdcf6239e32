"""Darknet frontend: a `.cfg` and its `.weights` -> IR `Graph`, without Darknet.

Every section is checked before any is read: an unknown section, an option the section does not take, or an
activation without a rule is a blocker, and all of them are reported together (Darknet itself warns and goes
on, running ReLU for an activation it does not know). Sections are then read in order by the registry's
converters; the weights file must hold exactly the arrays the layers read. The IR input is `input`, one
channels-first image (1, C, H, W) as `[net]` sizes it; the outputs are the detector heads (`[yolo]`,
`[region]`) and the last layer when it is not one of them. Layer i's output is recorded in
`graph.metadata["darknet_layers"][i]`, for per-layer comparison with libdarknet.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tensorbridge.errors import BlockerReport, ModelError, TensorbridgeError
from tensorbridge.formats.darknet import Section, WeightReader, read_cfg
from tensorbridge.ir.builder import Builder
from tensorbridge.ir.graph import Graph
from tensorbridge.rules.darknet import REGISTRY
from tensorbridge.rules.darknet.base import OPTIONS, TRAINING, layer_name

HEADS = ("yolo", "region")


def weights_beside(cfg: Path) -> Path:
    return cfg.with_suffix(".weights")


def load(source, weights: str | Path | None = None) -> Graph:
    """Read a Darknet model: `source` is the `.cfg` (or the `.weights`, with the `.cfg` of the same name beside
    it); `weights` names a weights file elsewhere."""
    path = Path(source)
    if path.suffix.lower() == ".weights" and weights is None:
        path, weights = path.with_suffix(".cfg"), path
        if not path.is_file():
            raise ModelError(f"{weights} needs its cfg: no {path.name} beside it")
    weights = Path(weights) if weights is not None else weights_beside(path)
    if not weights.is_file():
        raise ModelError(f"{path} needs its weights: no {weights.name} beside it (pass weights=PATH)")
    sections = read_cfg(path)
    _check(sections, str(path))
    return Importer(sections, WeightReader(weights), path.stem).run()


def _check(sections: list[Section], origin: str) -> None:
    report = BlockerReport(f"reading {origin}", "darknet")
    for s in sections:
        if s.kind != "net" and REGISTRY.import_rule(s.kind, "section") is None:
            report.add(f"[{s.kind}]", s.where(), "Darknet section without a rule")
            continue
        unknown = sorted(set(s.options) - OPTIONS[s.kind] - TRAINING)
        for option in unknown:
            report.add(f"[{s.kind}] {option}", s.where(), "option not taken by this section")
        name = s.options.get("activation")
        if name is not None and REGISTRY.import_rule(name.lower(), "activation") is None:
            report.add(f"activation={name}", s.where(), "Darknet activation without a rule")
    report.raise_if_any()


class Importer:
    def __init__(self, sections: list[Section], weights: WeightReader, name: str):
        self.net, self.layers = sections[0], sections[1:]
        self.weights, self.header = weights, weights.header
        self.graph = Graph(name)
        self.b = Builder(self.graph)
        self.outputs: list = []
        self.section: Section | None = None
        self.index = 0
        self.x = None

    # -- what converters use -------------------------------------------------------------------------------
    def _option(self, key: str, default, kind):
        text = self.section.options.get(key)
        if text is None:
            return default
        try:
            return kind(float(text)) if kind is int and "." in text else kind(text)
        except ValueError:
            raise ModelError(f"{key}={text!r} is not a number") from None

    def int(self, key: str, default: int) -> int:
        return self._option(key, default, int)

    def float(self, key: str, default: float) -> float:
        return self._option(key, default, float)

    def str(self, key: str, default: str) -> str:
        return self.section.options.get(key, default)

    def name(self, suffix: str) -> str:
        return self.b.name(suffix)

    def layer(self, ref: int):
        """The output of layer `ref` (negative: counted back from this one)."""
        index = self.index + ref if ref < 0 else ref
        if not 0 <= index < self.index:
            raise ModelError(f"refers to layer {ref}, which is not an earlier layer")
        value = self.outputs[index]
        if value is None:
            raise _Skipped()
        return value

    def take(self, count: int, what: str) -> np.ndarray:
        return self.weights.take(count, f"{self.section.where()} {what}")

    def weight(self, suffix: str, array):
        return self.b.weight(self.name(suffix), np.asarray(array, np.float32))

    def activate(self, x, name: str):
        rule = REGISTRY.import_rule(name.lower(), "activation")
        if rule.convert is not None:
            return rule.convert(self, x)
        return self.b.op(rule.ir_op, x, suffix="act", **rule.attrs)

    # -- reading -------------------------------------------------------------------------------------------
    def run(self) -> Graph:
        self.section = self.net
        c, h, w = self.int("channels", 0), self.int("height", 0), self.int("width", 0)
        if min(c, h, w) < 1:
            raise ModelError(f"[net] must size the input image (channels={c}, height={h}, width={w})")
        self.x = self.graph.add_input("input", np.float32, (1, c, h, w))
        self.graph.metadata["darknet"] = {"version": [self.header.major, self.header.minor, self.header.revision],
                                          "seen": self.header.seen, "net": dict(self.net.options)}
        report = BlockerReport("reading the Darknet model", "darknet")
        for index, s in enumerate(self.layers):
            self.index, self.section = index, s
            self.b.at(layer_name(s.kind, self.index), {"framework": "darknet", "source_op": s.kind,
                                                       "source_name": layer_name(s.kind, self.index)})
            try:
                y = REGISTRY.import_rule(s.kind, "section").convert(self, s) if self.x is not None else None
            except _Skipped:
                y = None
            except TensorbridgeError as e:
                if "truncated" in str(e):
                    raise
                report.add(f"[{s.kind}]", f"layer {self.index} ({s.where()})", str(e))
                y = None
            self.outputs.append(y)
            self.x = y
        report.raise_if_any()
        self.weights.finish()
        self._set_outputs()
        self.graph.metadata["darknet_layers"] = [v.name if v is not None else None for v in self.outputs]
        return self.graph

    def _set_outputs(self) -> None:
        """The detector heads, in cfg order, and the last layer (Darknet's own output) when it is not one."""
        kinds = [s.kind for s in self.layers]
        last = next((i for i in range(len(kinds) - 1, -1, -1) if kinds[i] != "cost"), None)
        if last is None:
            raise ModelError("the cfg has no layers")
        heads = [v for v, kind in zip(self.outputs, kinds) if kind in HEADS]
        self.graph.outputs.extend(dict.fromkeys(heads + ([] if kinds[last] in HEADS else [self.outputs[last]])))


class _Skipped(Exception):
    """A layer reads one that could not be read (already reported)."""
