"""A conversion killed by SIGTERM leaves nothing behind: its staging folder is removed."""

import signal
import subprocess
import sys
import textwrap
import time


def test_sigterm_removes_the_staged_output(small_cnn_path, tmp_path):
    script = textwrap.dedent(f"""
        import sys, time
        from tensorbridge.backends import tbir
        from tensorbridge.cli.main import main

        def slow_save(graph, dest, **options):  # writes, then takes long to finish
            open(dest, "wb").write(b"partial")
            print("staged", flush=True)
            time.sleep(60)

        tbir.save = slow_save
        sys.exit(main(["-q", "convert", {str(small_cnn_path)!r}, "-o", {str(tmp_path / "out.tbir")!r}]))
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "staged"
    assert list(tmp_path.glob(".out.tbir*"))  # the staging folder beside the output
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    time.sleep(0.1)
    assert not list(tmp_path.glob(".out.tbir*")) and not (tmp_path / "out.tbir").exists()
