"""Message classes built at run time from a vendored .proto's compiled descriptor (scripts/gen_descriptor.py), so
a format's schema works with whatever protobuf version the user has, without generated code."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace


def message_classes(descriptor: Path, package: str, names: tuple[str, ...]) -> SimpleNamespace:
    """`names` (messages of `package`) as classes, from the FileDescriptorSet at `descriptor`."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    files = descriptor_pb2.FileDescriptorSet.FromString(descriptor.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for f in files.file:
        pool.Add(f)
    return SimpleNamespace(**{n: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.{n}"))
                              for n in names})
