"""The conversion matrix as a test: a source through every target passes, or is refused with its blockers.

`make test` runs one small source of each framework family; `make test-all` (the `slow` marker) runs every
source of tests/matrix/sources.py, each in its own process as `python -m tests.matrix` does.
"""

from __future__ import annotations

import pytest

from tests.matrix.__main__ import run_one
from tests.matrix.cells import TARGETS
from tests.matrix.sources import all_sources

FAST = ("MobileNetV3Small", "mobilenet_v2")
ACCEPTED = {"pass", "refused"}


def _check(name: str) -> None:
    result = run_one(name, TARGETS)
    bad = {t: c for t, c in result["targets"].items() if c["status"] not in ACCEPTED}
    assert not bad, f"{name}: {bad}"
    for target, cell in result["targets"].items():
        if cell["status"] == "refused":
            assert cell.get("detail"), f"{name} -> {target} refused without naming its blockers"


@pytest.mark.parametrize("name", FAST)
def test_a_source_of_each_family_converts_to_every_target(name):
    _check(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", [s.name for s in all_sources()])
def test_every_source_converts_to_every_target_or_is_refused_with_blockers(name):
    _check(name)
