#!/usr/bin/env bash
# Caffe 1.0 for verification: Debian 12 has no package, so a Debian 11 (bullseye) chroot made by debootstrap with
# Debian's `caffe` and `python3-caffe` (CPU) inside, under the runtime cache. About 1.1 GB, under two minutes.
set -euo pipefail
ROOT=${TB_CAFFE_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/tensorbridge/runtimes/caffe/root}
MIRROR=${TB_DEBIAN_MIRROR:-http://deb.debian.org/debian}
if [ -x "$ROOT/usr/bin/python3" ] && chroot "$ROOT" python3 -c "import caffe" 2>/dev/null; then
    echo "caffe chroot: $ROOT"; exit 0
fi
command -v debootstrap >/dev/null || apt-get install -y --no-install-recommends debootstrap >/dev/null
mkdir -p "$ROOT"
debootstrap --variant=minbase bullseye "$ROOT" "$MIRROR" >/dev/null \
    || { echo "debootstrap of Debian 11 failed (is bullseye still on $MIRROR?)" >&2; exit 1; }
mountpoint -q "$ROOT/proc" || mount -t proc proc "$ROOT/proc"
trap 'umount "$ROOT/proc" 2>/dev/null || true' EXIT
chroot "$ROOT" apt-get install -y --no-install-recommends caffe python3-caffe >/dev/null
chroot "$ROOT" apt-get clean
mkdir -p "$ROOT/tb"
chroot "$ROOT" python3 -c "import caffe" && echo "caffe chroot: $ROOT"
