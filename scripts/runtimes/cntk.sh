#!/usr/bin/env bash
# CNTK 2.7 (CPU) for verification and for recording the CNTK fixtures, in its own venv under the runtime cache.
# CNTK's last wheels are for Python 3.6 (cp36); it finds one through pyenv or on the PATH (TB_PYTHON36 names one),
# installs `cntk==2.7.post2` with numpy < 1.20 (about 450 MB), and, since CNTK links against Open MPI 1.10's
# sonames, Debian's libopenmpi3 with a folder of links from those sonames to Open MPI 4's (the runner puts that
# folder on LD_LIBRARY_PATH). Under a minute.
set -euo pipefail
HOME_DIR=${TB_CNTK_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/tensorbridge/runtimes/cntk}
VENV=$HOME_DIR/venv
MPI=$HOME_DIR/mpi
check() { LD_LIBRARY_PATH="$MPI" "$VENV/bin/python" -c "import cntk" 2>/dev/null; }
if [ -x "$VENV/bin/python" ] && check; then
    echo "cntk venv: $VENV"; exit 0
fi
PYTHON36=${TB_PYTHON36:-}
if [ -z "$PYTHON36" ]; then
    for candidate in "$(pyenv root 2>/dev/null)/versions/3.6.15/bin/python" \
                     "$(ls -d "$(pyenv root 2>/dev/null)"/versions/3.6.*/bin/python 2>/dev/null | tail -n 1)" \
                     "$(command -v python3.6 || true)"; do
        if [ -n "$candidate" ] && [ -x "$candidate" ]; then PYTHON36=$candidate; break; fi
    done
fi
if [ -z "$PYTHON36" ]; then
    echo "no Python 3.6 found (CNTK 2.7 has wheels for 3.6 at the newest): install one (pyenv install 3.6.15) or" \
         "set TB_PYTHON36" >&2
    exit 1
fi
libdir=$(dirname "$(ldconfig -p | awk '/libmpi\.so\.40 /{print $NF; exit}')" 2>/dev/null || true)
if [ -z "$libdir" ] || [ ! -e "$libdir/libmpi_cxx.so.40" ]; then
    apt-get install -y -q --no-install-recommends libopenmpi3 >/dev/null
    libdir=$(dirname "$(ldconfig -p | awk '/libmpi\.so\.40 /{print $NF; exit}')")
fi
mkdir -p "$MPI"
ln -sf "$libdir/libmpi.so.40" "$MPI/libmpi.so.12"
ln -sf "$libdir/libmpi_cxx.so.40" "$MPI/libmpi_cxx.so.1"
"$PYTHON36" -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade "pip<22"
"$VENV/bin/pip" install -q cntk==2.7.post2 "numpy<1.20"
check && echo "cntk venv: $VENV"
