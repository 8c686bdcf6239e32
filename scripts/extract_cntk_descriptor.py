"""Extract CNTK's model schema (CNTK.proto, MIT-licensed) from the CNTK 2.7 wheel into
tensorbridge/formats/cntk/cntk_descriptor.pb.

The wheel ships no .proto file, but libCntk.Core embeds the compiled schema (a serialized FileDescriptorProto, as
protobuf's generated code does); this reads it out, checks that it parses and names the messages the CNTK reader
uses, and writes it as a FileDescriptorSet. Run it with any Python that has protobuf, on the library of the CNTK venv
that `make runtimes` builds:

    python scripts/extract_cntk_descriptor.py ~/.cache/tensorbridge/runtimes/cntk/venv/lib/python3.6/site-packages/cntk/libs/libCntk.Core-2.7.so
"""

import sys
from pathlib import Path

from google.protobuf import descriptor_pb2

OUT = Path(__file__).resolve().parents[1] / "tensorbridge" / "formats" / "cntk" / "cntk_descriptor.pb"
START = b"\n\nCNTK.proto\x12\nCNTK.proto"  # field 1 (name) and field 2 (package), both "CNTK.proto"
MESSAGES = {"NDShape", "Axis", "NDArrayView", "Vector", "Dictionary", "DictionaryValue"}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def extract(library: bytes) -> descriptor_pb2.FileDescriptorProto:
    """The FileDescriptorProto that starts at START: its fields read until the first that a FileDescriptorProto
    does not have (fields 1-14, varints or length-delimited)."""
    start = library.find(START)
    if start < 0:
        raise SystemExit("no CNTK.proto descriptor in that file")
    pos = start
    while True:
        key, after = _varint(library, pos)
        field, wire = key >> 3, key & 7
        if not 1 <= field <= 14 or wire not in (0, 2):
            break
        value, after = _varint(library, after)
        pos = after + (value if wire == 2 else 0)
    proto = descriptor_pb2.FileDescriptorProto.FromString(library[start:pos])
    if {m.name for m in proto.message_type} != MESSAGES:
        raise SystemExit(f"unexpected messages: {[m.name for m in proto.message_type]}")
    return proto


if __name__ == "__main__":
    files = descriptor_pb2.FileDescriptorSet(file=[extract(Path(sys.argv[1]).read_bytes())])
    OUT.write_bytes(files.SerializeToString())
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")
