"""A `.pt2` archive is read as data: a pickle or code in any place the archive can hold one never runs.

Each test plants a payload that would create a marker file, in one of those places, and checks the marker
is never created; the archive is either converted without it (sample inputs, guard code: tensorbridge does
not need them) or refused with exit 2 naming the place.
"""

import json
import pickle
import zipfile

import pytest

from tensorbridge.cli.main import main

torch = pytest.importorskip("torch")


class _Payload:
    """Unpickling this writes the marker file."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').close()",))


@pytest.fixture
def program(tmp_path):
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 3)

        def forward(self, x):
            return torch.tanh(self.fc(x))

    torch.manual_seed(0)
    path = tmp_path / "net.pt2"
    batch = torch.export.Dim("batch", min=1, max=64)
    torch.export.save(torch.export.export(Net(), (torch.randn(2, 4),), dynamic_shapes=({0: batch},)), str(path))
    return path


def _rewrite(path, edit) -> None:
    """Rewrite the archive's members through edit(records: {name without the root folder: bytes})."""
    with zipfile.ZipFile(path) as z:
        root = z.namelist()[0].split("/")[0] + "/"
        records = {n[len(root):]: z.read(n) for n in z.namelist()}
    edit(records)
    with zipfile.ZipFile(path, "w") as z:
        for name, data in records.items():
            z.writestr(root + name, data)


def _edit_json(records, name, change) -> None:
    doc = json.loads(records[name])
    change(doc)
    records[name] = json.dumps(doc).encode()


def _convert(path, tmp_path, capsys) -> tuple[int, str]:
    code = main(["-q", "convert", str(path), "-o", str(tmp_path / "out.onnx")])
    return code, capsys.readouterr().err


def test_pickled_sample_inputs_are_never_unpickled(program, tmp_path, capsys):
    marker = tmp_path / "ran"
    _rewrite(program, lambda r: r.update({"data/sample_inputs/model.pt": pickle.dumps(_Payload(marker))}))
    code, err = _convert(program, tmp_path, capsys)
    assert code == 0, err
    assert not marker.exists()


def test_a_pickled_weight_is_a_listed_blocker(program, tmp_path, capsys):
    marker = tmp_path / "ran"

    def edit(records):
        def mark(doc):
            entry = next(iter(doc["config"].values()))
            entry["use_pickle"] = True
            records["data/weights/" + entry["path_name"]] = pickle.dumps(_Payload(marker))
        _edit_json(records, "data/weights/model_weights_config.json", mark)

    _rewrite(program, edit)
    code, err = _convert(program, tmp_path, capsys)
    assert code == 2 and "pickle" in err and "fc." in err
    assert not marker.exists() and not (tmp_path / "out.onnx").exists()


@pytest.mark.parametrize("prefix", ["opaque_obj_", "custom_obj_", "tensor_"])
def test_a_pickled_constant_is_a_listed_blocker(program, tmp_path, capsys, prefix):
    marker = tmp_path / "ran"

    def edit(records):
        def add(doc):
            doc["config"]["evil"] = {"path_name": f"{prefix}0", "is_param": False, "use_pickle": True,
                                     "tensor_meta": None}
        _edit_json(records, "data/constants/model_constants_config.json", add)
        records[f"data/constants/{prefix}0"] = pickle.dumps(_Payload(marker))

    _rewrite(program, edit)
    code, err = _convert(program, tmp_path, capsys)
    assert code == 2 and "evil" in err
    assert not marker.exists()


def test_guard_code_is_never_run(program, tmp_path, capsys):
    marker = tmp_path / "ran"
    guard = f"__import__('builtins').open({str(marker)!r}, 'w').close() is None"
    _rewrite(program, lambda r: _edit_json(r, "models/model.json", lambda d: d.update(guards_code=[guard])))
    code, err = _convert(program, tmp_path, capsys)  # converts and verifies: the program runs in torch
    assert code == 0, err
    assert not marker.exists()


def test_a_target_that_is_not_an_operator_is_a_listed_blocker(program, tmp_path, capsys):
    def retarget(doc):
        doc["graph_module"]["graph"]["nodes"][-1]["target"] = "torch.os.system"
    _rewrite(program, lambda r: _edit_json(r, "models/model.json", retarget))
    code, err = _convert(program, tmp_path, capsys)
    assert code == 2 and "torch.os.system" in err


def test_a_size_expression_that_is_code_is_a_listed_blocker(program, tmp_path, capsys):
    marker = tmp_path / "ran"
    payload = f"__import__('os').system('touch {marker}')"

    def inject(doc):
        values = doc["graph_module"]["graph"]["tensor_values"]
        for value in values.values():
            for size in value["sizes"]:
                if "as_expr" in size:
                    size["as_expr"]["expr_str"] = payload
    _rewrite(program, lambda r: _edit_json(r, "models/model.json", inject))
    code, err = _convert(program, tmp_path, capsys)
    assert code == 2 and "expression" in err
    assert not marker.exists()


def test_compiled_code_in_the_archive_is_a_listed_blocker(program, tmp_path, capsys):
    _rewrite(program, lambda r: r.update({"data/aotinductor/model/model.so": b"\x7fELF"}))
    code, err = _convert(program, tmp_path, capsys)
    assert code == 2 and "compiled code" in err


def test_a_zip_bomb_member_is_refused_before_it_is_inflated(program, tmp_path, capsys):
    with zipfile.ZipFile(program, "a", zipfile.ZIP_DEFLATED) as z:
        root = z.namelist()[0].split("/")[0]
        z.writestr(f"{root}/extra/padding", bytes(32 << 20))  # 32 MiB of zeros deflate ~1000x
    code, err = _convert(program, tmp_path, capsys)
    assert code == 2 and "zip bomb" in err


def test_a_size_expression_is_arithmetic_of_numbers_and_symbols_only():
    """A Float's digits (a range of float bounds sizes by them) are arithmetic; any other string is not."""
    from tensorbridge.frontends.torch.pt2_archive import _arithmetic

    assert _arithmetic("CeilToInt(FloatTrueDiv(Add(Float('5.0', precision=53), Mul(Integer(-1), Symbol('u0'))), "
                       "Float('1e-3', precision=53)))")
    for hostile in ("Float('__import__(\"os\")', precision=53)", "Float('5.0', precision=open('x'))",
                    "Symbol('os.system')", "Float('5.0' + 'x')"):
        assert not _arithmetic(hostile), hostile
