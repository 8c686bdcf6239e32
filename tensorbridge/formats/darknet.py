"""Darknet's two files, parsed and written without Darknet: the `.cfg` text and the `.weights` binary.

A cfg is a list of sections (`[convolutional]`, `[route]` ...) of `key=value` options, read as Darknet reads
it: whitespace anywhere in a line is dropped, lines starting with `#` or `;` are comments, and section names
have short aliases (`[conv]`, `[max]` ...). A weights file is a header (major, minor, revision as int32, then
the count of images seen: int64 from version 0.2 on, int32 before), then each layer's float32 arrays in the
order its layer reads them. What the sections mean lives in the Darknet registry (rules/darknet).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tensorbridge.errors import ModelError

#: the longest cfg read (the stock cfgs are under 20 KB; a larger one is not a cfg)
CFG_LIMIT = 4 << 20
ALIASES = {"conv": "convolutional", "conn": "connected", "max": "maxpool", "avg": "avgpool", "soft": "softmax",
           "network": "net", "lrn": "normalization"}


@dataclass
class Section:
    kind: str
    options: dict[str, str] = field(default_factory=dict)
    line: int = 0

    def where(self) -> str:
        return f"[{self.kind}] at line {self.line}" if self.line else f"[{self.kind}]"


def read_cfg(path: str | Path) -> list[Section]:
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > CFG_LIMIT:
            raise ModelError(f"{path} is {size:,} bytes: too large for a Darknet cfg")
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ModelError(f"{path} is not a Darknet cfg: it is not text") from None
    except OSError as e:
        raise ModelError(f"cannot read {path}: {e.strerror}") from None
    return parse_cfg(text, str(path))


def parse_cfg(text: str, origin: str = "cfg") -> list[Section]:
    sections: list[Section] = []
    problems = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = "".join(raw.split())
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            if not line.endswith("]") or len(line) < 3:
                problems.append(f"line {number}: {raw.strip()!r} is not a section header")
                continue
            kind = line[1:-1].lower()
            sections.append(Section(ALIASES.get(kind, kind), {}, number))
        elif "=" not in line:
            problems.append(f"line {number}: {raw.strip()!r} is neither a section nor key=value")
        elif not sections:
            problems.append(f"line {number}: option {line!r} before the first section")
        else:
            key, value = line.split("=", 1)
            if key in sections[-1].options:
                problems.append(f"line {number}: option {key!r} given twice in {sections[-1].where()}")
            sections[-1].options[key] = value
    if not problems and (not sections or sections[0].kind != "net"):
        problems.append("it does not start with a [net] section")
    if problems:
        raise ModelError(f"{origin} is not a valid Darknet cfg: " + "; ".join(problems[:20]))
    return sections


def format_cfg(sections: list[Section]) -> str:
    blocks = []
    for s in sections:
        blocks.append("\n".join([f"[{s.kind}]", *(f"{k}={v}" for k, v in s.options.items())]))
    return "\n\n".join(blocks) + "\n"


@dataclass
class Header:
    major: int = 0
    minor: int = 2
    revision: int = 0
    seen: int = 0

    @property
    def wide_seen(self) -> bool:
        return self.major * 10 + self.minor >= 2 and self.major < 1000 and self.minor < 1000

    @property
    def transposed(self) -> bool:
        """Weights saved by a Darknet that stored connected layers' matrices transposed."""
        return self.major > 1000 or self.minor > 1000

    def to_bytes(self) -> bytes:
        head = np.array([self.major, self.minor, self.revision], "<i4").tobytes()
        return head + np.array([self.seen], "<i8" if self.wide_seen else "<i4").tobytes()


class WeightReader:
    """Reads the float32 arrays of a weights file in order; `finish` checks every byte was read."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self.data = np.memmap(self.path, dtype=np.uint8, mode="r") if self.path.stat().st_size else \
                np.zeros(0, np.uint8)
        except OSError as e:
            raise ModelError(f"cannot read {self.path}: {e.strerror}") from None
        if self.data.size < 16:
            raise ModelError(f"{self.path} is not a Darknet weights file: {self.data.size} bytes, shorter than its "
                             "header")
        major, minor, revision = (int(x) for x in self.data[:12].view("<i4"))
        self.header = Header(major, minor, revision)
        width = 8 if self.header.wide_seen else 4
        self.header.seen = int(self.data[12:12 + width].view("<i8" if width == 8 else "<i4")[0])
        self.offset = 12 + width

    def take(self, count: int, what: str) -> np.ndarray:
        end = self.offset + 4 * count
        if end > self.data.size:
            have = (self.data.size - self.offset) // 4
            raise ModelError(f"{self.path} is truncated: {what} needs {count:,} floats, {have:,} are left")
        out = np.array(self.data[self.offset:end].view("<f4"), np.float32)
        self.offset = end
        return out

    def finish(self) -> None:
        extra = self.data.size - self.offset
        if extra:
            raise ModelError(f"{self.path} holds {extra:,} bytes more than the cfg's layers read: the weights and "
                             "the cfg do not belong together")


def write_weights(path: str | Path, header: Header, arrays: list[np.ndarray]) -> None:
    with open(path, "wb") as f:
        f.write(header.to_bytes())
        for a in arrays:
            f.write(np.ascontiguousarray(a, dtype="<f4").tobytes())
