"""The protobuf wire format, walked by hand where weights must stay in the file (ONNX, Caffe).

A field is a varint key (field_number << 3 | wire_type); wire type 0 is a varint, 1 is 8 bytes, 2 is a varint
length plus bytes, 5 is 4 bytes. `fields` yields each field's spans so a reader can parse the small parts with
protobuf and map the large ones as NumPy views; `len_field` starts a length-delimited field a writer then
streams with `streaming.write_array`.
"""

from __future__ import annotations

from tensorbridge.errors import ModelError


def varint(buf, pos: int, end: int, what: str = "file") -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end:
            raise ModelError(f"truncated {what} (varint runs past the end)")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ModelError(f"malformed {what} (varint too long)")


def fields(buf, start: int, end: int, what: str = "file"):
    """Yield (field_number, wire_type, field_start, value_start, value_end) for one message."""
    pos = start
    while pos < end:
        field_start = pos
        key, pos = varint(buf, pos, end, what)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, after = varint(buf, pos, end, what)
        elif wire == 1:
            after = pos + 8
        elif wire == 2:
            length, pos = varint(buf, pos, end, what)
            after = pos + length
        elif wire == 5:
            after = pos + 4
        else:
            raise ModelError(f"malformed {what} (unsupported wire type {wire})")
        if after > end:
            raise ModelError(f"truncated {what} (a field runs past the end)")
        yield number, wire, field_start, pos, after
        pos = after


def encode_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def len_field(number: int, length: int) -> bytes:
    """The key and length of a length-delimited field whose `length` bytes follow."""
    return encode_varint(number << 3 | 2) + encode_varint(length)
