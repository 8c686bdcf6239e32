#!/usr/bin/env bash
# PaddlePaddle 2.6.2 in a venv of its own, used only by tests/paddle/record.py to save in the legacy form
# (model.pdmodel) the fixture models Paddle 3.3 cannot save that way, as the published PP-OCR inference models were
# saved. Not part of `make runtimes`: verification runs Paddle 3.3 (scripts/runtimes/paddle.sh). About 1 GB.
set -euo pipefail
VENV=${TB_PADDLE2_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tensorbridge/runtimes/paddle2/venv}
PYTHON=${PYTHON:-python3}
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import paddle" 2>/dev/null; then
    echo "paddle 2.6 venv: $VENV"; exit 0
fi
"$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q paddlepaddle==2.6.2 "numpy<2"
"$VENV/bin/python" -c "import paddle" && echo "paddle 2.6 venv: $VENV"
