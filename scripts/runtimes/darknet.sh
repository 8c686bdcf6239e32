#!/usr/bin/env bash
# Darknet for verification: Debian's `darknet` package (pjreddie's libdarknet, 2018, with the stock cfgs under
# /usr/share/darknet/cfg) and tensorbridge's small C shim over it, built into the runtime cache.
set -euo pipefail
PY=${PY:-.venv/bin/python}
if [ ! -f /usr/lib/darknet/libdarknet.so ]; then
    apt-get install -y --no-install-recommends darknet gcc libc6-dev >/dev/null
fi
"$PY" -c "from tensorbridge.verification.runners.darknet import build_shim; print('darknet shim:', build_shim())"
