"""The per-op corpus is the support matrix's evidence, and the evidence is current.

- The fast formats (ONNX, PyTorch code, .tbir) are re-run here, one case per op, in and out, and must
  give what the committed evidence says; the others (Keras, TFLite, .pt2, SavedModel, cross pairs)
  run in `make test-all` (`-m slow`) and when the evidence is regenerated.
- Every op a registry claims to read or write has a passing case in that column, or is listed in
  known_gaps.txt with the reason; a listed gap that passes fails the test too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tensorbridge import frameworks, support
from tensorbridge.ops.schema import all_op_names
from tests.cases.corpus import DERIVED, FAST, OUT, run_op

KNOWN_GAPS = Path(__file__).with_name("known_gaps.txt")


def read_gaps() -> dict[tuple[str, str, str], str]:
    gaps = {}
    for line in KNOWN_GAPS.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            direction, fmt, op, why = line.split(None, 3)
            gaps[(direction, fmt, op)] = why
    return gaps


def claims() -> dict[tuple[str, str, str], bool]:
    """(direction, format, op) -> whether a passing case backs the registry's claim."""
    ops = support.evidence()["ops"]
    out = {}
    for fmt in frameworks.FORMATS:
        registry = frameworks.registry(fmt)
        if registry is None:
            continue
        for direction, claimed in (("in", registry.importable() if fmt.loader else set()),
                                   ("out", registry.exportable() if fmt.saver else set())):
            for op in claimed:
                results = ops.get(op, {}).get(direction, {}).get(fmt.name, [])
                out[(direction, fmt.name, op)] = any(r == "pass" for r in results)
    return out


def test_every_claim_has_a_passing_case_or_a_listed_gap():
    gaps = read_gaps()
    missing = sorted(k for k, ok in claims().items() if not ok and k not in gaps)
    stale = sorted(k for k, ok in claims().items() if ok and k in gaps)
    assert not missing, "registry claims without a passing case (fix, or list in known_gaps.txt):\n" + \
        "\n".join(" ".join(k) for k in missing)
    assert not stale, "listed gaps that pass now (remove them):\n" + "\n".join(" ".join(k) for k in stale)


def test_evidence_covers_the_catalogue():
    assert set(support.evidence()["ops"]) == all_op_names(), "regenerate: python -m tests.cases.corpus --write"


@pytest.mark.parametrize("op", sorted(all_op_names()))
def test_fast_formats_match_the_evidence(op):
    recorded = support.evidence()["ops"][op]
    live = run_op(op, FAST, limit=1)
    for direction in ("out", "in"):
        for fmt in FAST:
            got = live[direction].get(fmt, [])
            assert got == recorded[direction].get(fmt, [])[:1], (direction, fmt, got,
                                                                recorded[direction].get(fmt, [])[:1])


@pytest.mark.slow
@pytest.mark.parametrize("op", sorted(all_op_names()))
def test_every_format_matches_the_evidence(op):
    live = run_op(op, OUT + tuple(DERIVED))
    recorded = support.evidence()["ops"][op]
    assert {d: live[d] for d in ("out", "in")} == {d: recorded[d] for d in ("out", "in")}
