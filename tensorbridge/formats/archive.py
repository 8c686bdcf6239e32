"""Zip archives (`.pt2`, `.keras`, TorchScript) opened as hostile input: checked before anything is inflated.

A member's declared size bounds what reading it allocates (Python's zipfile stops there and checks the
CRC), so the declared sizes are checked against the archive's own size first: a member that would inflate
far beyond what deflate gives real weights, or an archive whose members add up to much more than it
holds, is refused as a zip bomb. Duplicate and escaping member names (the usual zip tricks) are refused too.
"""

from __future__ import annotations

import zipfile
from pathlib import Path, PurePosixPath

from tensorbridge.errors import ModelError

#: the largest inflation ratio accepted for a member above MIN_CHECKED bytes (weights deflate ~1.1-10x;
#: constant-filled tensors more, but not 1000x at this size)
MAX_RATIO = 200
MIN_CHECKED = 16 << 20
#: what zipfile raises for a damaged archive or member (RuntimeError: an encrypted member)
_DAMAGED = (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, RuntimeError)


class CheckedZip:
    """A zip file whose member list was checked; `read` re-checks the bytes it inflates."""

    def __init__(self, path, what: str):
        self.path = Path(path)
        self.what = what
        try:
            self.zip = zipfile.ZipFile(self.path)
            infos = self.zip.infolist()
        except _DAMAGED as e:
            raise ModelError(f"{self.path} is not a readable {what}: damaged zip archive ({e})") from None
        self.members = {}
        size = self.path.stat().st_size
        for info in infos:
            self._check(info, size)
            self.members[info.filename] = info
        declared = sum(i.file_size for i in infos)
        if declared > MAX_RATIO * size + MIN_CHECKED:
            self._refuse(f"its members declare {declared:,} bytes in a {size:,}-byte archive (a zip bomb?)")

    def _check(self, info: zipfile.ZipInfo, size: int) -> None:
        name = info.filename
        parts = PurePosixPath(name).parts
        if name.startswith("/") or ".." in parts or "\\" in name or "\x00" in name:
            self._refuse(f"member {name!r} points outside the archive")
        if name in self.members:
            self._refuse(f"member {name!r} is stored twice")
        if info.file_size > MIN_CHECKED and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            self._refuse(f"member {name!r} declares {info.file_size:,} bytes from {info.compress_size:,} "
                         "(a zip bomb?)")
        if info.compress_size > size:
            self._refuse(f"member {name!r} claims more bytes than the archive holds")

    def _refuse(self, why: str):
        raise ModelError(f"{self.path} is not a readable {self.what}: {why}")

    def read(self, name: str) -> bytes:
        try:
            return self.zip.read(self.members[name])
        except _DAMAGED as e:
            self._refuse(f"member {name!r} is damaged ({e})")

    def close(self) -> None:
        self.zip.close()

    def __enter__(self) -> CheckedZip:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
