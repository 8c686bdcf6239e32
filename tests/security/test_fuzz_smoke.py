"""A short seeded run of the fuzzing campaign (`make fuzz` runs 1,000 mutants per format): every run of every
mutant ends in a valid output or a clean refusal."""

import pytest

from tests.fuzz import campaign, seeds


@pytest.mark.parametrize("family", ["torch", "tf"])
def test_a_few_mutants_per_format_end_cleanly(family, tmp_path):
    formats = [f for f, (fam, _) in seeds.SEEDS.items() if fam == family]
    records = campaign.campaign({fmt: list(range(3)) for fmt in formats}, seed=1, work=tmp_path)
    assert len(records) == len(formats) * 3 * 2
    bad = [r for r in records if r["result"] != "ok"]
    assert not bad, "\n".join(f"{r['result']}: {r['format']} #{r['mutant']} {r['command']} ({r['mutation']}): "
                              f"{r['message']}" for r in bad)
