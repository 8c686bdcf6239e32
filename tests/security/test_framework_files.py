"""Framework files that would stop the process inside a C library: refused before the library sees them."""

import json
import shutil
import time
import zipfile
from pathlib import Path

import pytest

from tensorbridge.cli.main import main

FIXTURES = Path(__file__).parent / "fixtures"


def test_an_hdf5_file_whose_reading_never_ends_is_refused(tmp_path, capsys):
    """A fuzzing mutant (64 bit flips of a Keras .h5): h5py loops for ever reading its `model_config`."""
    path = shutil.copy(FIXTURES / "attribute_heap_loop.h5", tmp_path / "model.h5")
    started = time.monotonic()
    assert main(["inspect", str(path)]) == 2
    assert time.monotonic() - started < 20
    err = capsys.readouterr().err
    assert "is not a readable Keras model (HDF5)" in err and "did not finish in" in err


def test_an_integer_tensorflow_cannot_hold_is_refused(tmp_path, capsys):
    """TensorFlow aborts the process (a failed CHECK) on a 64-bit stride; the configuration is checked first."""
    keras = pytest.importorskip("keras")
    model = keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Conv2D(4, 3, name="conv")])
    good = tmp_path / "good.keras"
    model.save(good)
    bad = tmp_path / "bad.keras"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(bad, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "config.json":
                config = json.loads(data)
                config["config"]["layers"][-1]["config"]["strides"] = [1, 1 << 62]
                data = json.dumps(config).encode()
            dst.writestr(item, data)
    assert main(["convert", str(bad), "-o", str(tmp_path / "out.onnx")]) == 2
    err = capsys.readouterr().err
    assert "beyond the 32-bit range" in err and "strides/1 = 4611686018427387904" in err
    assert not (tmp_path / "out.onnx").exists()
