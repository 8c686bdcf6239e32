"""Sources that are code load only with --trust-code: a code folder runs its Python when imported."""

import subprocess
import sys

import tensorbridge as tb


def _cli(*args) -> subprocess.CompletedProcess:
    """A fresh process: it did not write the folder, so nothing it reads is trusted by default."""
    return subprocess.run([sys.executable, "-m", "tensorbridge", "-q", *args], capture_output=True, text=True,
                          timeout=300)


def test_a_code_folder_is_not_imported_without_trust_code(small_cnn_path, tmp_path):
    folder = tb.save(tb.load(small_cnn_path), tmp_path / "net", to="torch")
    marker = tmp_path / "ran"
    with open(folder / "model.py", "a") as f:  # what a hostile folder would do on import
        f.write(f"\nopen({str(marker)!r}, 'w').close()\n")

    inspected = _cli("inspect", str(folder))
    assert inspected.returncode == 2 and "--trust-code" in inspected.stderr
    converted = _cli("convert", str(folder), "-o", str(tmp_path / "net.onnx"))
    assert converted.returncode == 2 and not (tmp_path / "net.onnx").exists()
    assert not marker.exists()

    assert _cli("inspect", str(folder), "--trust-code").returncode == 0
    assert marker.exists()
