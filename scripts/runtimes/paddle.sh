#!/usr/bin/env bash
# PaddlePaddle 3.3.1 (CPU) for verification, in its own venv under the runtime cache: paddle.inference runs both
# of Paddle's saved formats (PIR model.json and the legacy model.pdmodel). About 1.1 GB, under a minute.
set -euo pipefail
VENV=${TB_PADDLE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tensorbridge/runtimes/paddle/venv}
PYTHON=${PYTHON:-python3}
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import paddle" 2>/dev/null; then
    echo "paddle venv: $VENV"; exit 0
fi
"$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q paddlepaddle==3.3.1
"$VENV/bin/python" -c "import paddle" && echo "paddle venv: $VENV"
