#!/usr/bin/env bash
# MXNet 1.9.1 for verification, in its own venv under the runtime cache: it needs numpy 1.23.5 (it imports
# np.bool, which numpy 1.24 removed), so it cannot share the main venv. About 300 MB, under a minute.
set -euo pipefail
VENV=${TB_MXNET_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tensorbridge/runtimes/mxnet/venv}
PYTHON=${PYTHON:-python3}
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import mxnet" 2>/dev/null; then
    echo "mxnet venv: $VENV"; exit 0
fi
"$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q mxnet==1.9.1 numpy==1.23.5
"$VENV/bin/python" -c "import mxnet" && echo "mxnet venv: $VENV"
