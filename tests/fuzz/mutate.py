"""Mutations of a model file (or folder), in place, chosen by a seeded `random.Random`.

Classes: truncation, byte flips, header bombs (a length or count field overwritten with a huge or negative
value), zip tricks (duplicate, missing, damaged and bomb members, lying sizes), structural mutations of the
JSON a format carries (the .tbir header, a .pt2 program, a .keras config), ONNX graph mutations (dangling
inputs, unknown ops, cycles, huge dims, type mismatches, non-UTF-8 strings, endless loops, folding bombs),
and payloads: pickles and code that would create `marker` if anything ran them.
"""

from __future__ import annotations

import json
import pickle
import random
import struct
import zipfile
from pathlib import Path

HUGE = [2**31 - 1, 2**32, 2**62, -1, -(2**31), 0]


class Payload:
    """Unpickling this creates the marker file."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').close()",))


def payload_code(marker) -> str:
    return f"__import__('builtins').open({str(marker)!r}, 'w').close()"


# -- bytes --------------------------------------------------------------------------------------------
def truncate(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    cut = rng.randrange(len(data))
    return data[:cut], f"truncated at {cut}"


def flip(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    out = bytearray(data)
    n = rng.choice([1, 2, 4, 16, 64])
    for _ in range(n):
        out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out), f"{n} bit flips"


def header_bomb(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A 4- or 8-byte little-endian field near the start overwritten with a huge or negative number."""
    out = bytearray(data)
    width = rng.choice([4, 8])
    at = rng.randrange(0, max(1, min(len(out) - width, 256)))
    value = rng.choice(HUGE)
    out[at:at + width] = struct.pack("<q" if width == 8 else "<i", max(min(value, 2**63 - 1), -(2**63)) if width == 8
                                     else max(min(value, 2**31 - 1), -(2**31)))
    return bytes(out), f"field at {at} set to {value}"


BYTE_MUTATIONS = [truncate, flip, header_bomb]


# -- JSON -----------------------------------------------------------------------------------------------
def mutate_json(doc, rng: random.Random, marker) -> tuple[object, str]:
    """One structural change at a random place of a JSON document."""
    paths = list(_paths(doc))
    if not paths:
        return doc, "empty"
    path = rng.choice(paths)
    parent, key = _parent(doc, path)
    choice = rng.randrange(9)
    if choice == 0 and isinstance(parent, dict):
        del parent[key]
        return doc, f"deleted {path}"
    value = [-1, 2**62, "", None, [], {}, "\x1b[2J\u202e", payload_code(marker),
             _nested(200)][choice]
    parent[key] = value
    return doc, f"{path} = {str(value)[:40]!r}"


def _nested(depth: int):
    out: list = []
    for _ in range(depth):
        out = [out]
    return out


def _paths(doc, prefix=()):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield prefix + (k,)
            yield from _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield prefix + (i,)
            yield from _paths(v, prefix + (i,))


def _parent(doc, path):
    for k in path[:-1]:
        doc = doc[k]
    return doc, path[-1]


# -- zip ------------------------------------------------------------------------------------------------
def mutate_zip(path: Path, rng: random.Random, marker, json_members: tuple[str, ...] = ()) -> str:
    with zipfile.ZipFile(path) as z:
        members = [(i, z.read(i.filename)) for i in z.infolist()]
    choice = rng.randrange(6)
    index = rng.randrange(len(members))
    info, data = members[index]
    what = ""
    if choice == 0:
        members.append((info, b"\x00" * len(data)))
        what = f"duplicated {info.filename}"
    elif choice == 1:
        members.pop(index)
        what = f"removed {info.filename}"
    elif choice == 2:
        members[index] = (info, flip(data, rng)[0] if data else b"x")
        what = f"damaged {info.filename}"
    elif choice == 3:
        root = info.filename.split("/")[0] + "/" if "/" in info.filename else ""
        members.append((zipfile.ZipInfo(root + "extra/bomb"), bytes(48 << 20)))
        what = "a 48 MiB deflate bomb member"
    elif choice == 4:
        candidates = [(i, m) for i, m in enumerate(members) if m[0].filename.endswith(json_members or (".json",))]
        if candidates:
            index, (info, data) = rng.choice(candidates)
            try:
                doc, what = mutate_json(json.loads(data), rng, marker)
                members[index] = (info, json.dumps(doc).encode())
            except ValueError:
                what = "unparsable JSON left as is"
        else:
            what = "no JSON member"
    else:
        _write(path, members)
        lie(path, rng)
        return f"{info.filename}: a lying size"
    _write(path, members)
    return what


def _write(path: Path, members) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for info, data in members:
            z.writestr(info.filename, data)


def lie(path: Path, rng: random.Random) -> None:
    """Overwrite one central-directory entry's uncompressed size with a huge value."""
    data = bytearray(path.read_bytes())
    at = data.rfind(b"PK\x01\x02")
    if at >= 0:
        data[at + 24:at + 28] = struct.pack("<I", rng.choice([0xFFFFFFF0, 0x7FFFFFFF, 0]))
        path.write_bytes(bytes(data))


# -- .pt2 payloads ---------------------------------------------------------------------------------------
def pt2_payload(path: Path, rng: random.Random, marker) -> str:
    """A pickle or code payload in one of the places a .pt2 can hold one."""
    with zipfile.ZipFile(path) as z:
        root = z.namelist()[0].split("/")[0] + "/"
        records = {n[len(root):]: z.read(n) for n in z.namelist()}
    place = rng.choice(["sample_inputs", "weight", "opaque", "custom_obj", "guards", "target", "expr"])
    bomb = pickle.dumps(Payload(str(marker)))
    if place == "sample_inputs":
        records["data/sample_inputs/model.pt"] = bomb
    elif place == "weight":
        config = json.loads(records["data/weights/model_weights_config.json"])
        entry = next(iter(config["config"].values()))
        entry["use_pickle"] = True
        records["data/weights/" + entry["path_name"]] = bomb
        records["data/weights/model_weights_config.json"] = json.dumps(config).encode()
    elif place in ("opaque", "custom_obj"):
        config = json.loads(records["data/constants/model_constants_config.json"])
        name = f"{place}_obj_0" if place == "opaque" else "custom_obj_0"
        config["config"]["evil"] = {"path_name": name, "is_param": False, "use_pickle": True, "tensor_meta": None}
        records["data/constants/" + name] = bomb
        records["data/constants/model_constants_config.json"] = json.dumps(config).encode()
    else:
        program = json.loads(records["models/model.json"])
        if place == "guards":
            program["guards_code"] = [payload_code(marker) + " is None"]
        elif place == "target":
            program["graph_module"]["graph"]["nodes"][0]["target"] = "torch.os.system"
        else:
            for value in program["graph_module"]["graph"]["tensor_values"].values():
                for size in value.get("sizes", []):
                    if "as_expr" in size:
                        size["as_expr"]["expr_str"] = payload_code(marker)
        records["models/model.json"] = json.dumps(program).encode()
    with zipfile.ZipFile(path, "w") as z:
        for name, data in records.items():
            z.writestr(root + name, data)
    return f"payload in {place}"


# -- ONNX graphs -----------------------------------------------------------------------------------------
def mutate_onnx(path: Path, rng: random.Random, marker) -> str:
    import onnx
    from onnx import TensorProto, helper

    model = onnx.load(path)
    g = model.graph
    node = rng.choice(list(g.node))
    choice = rng.randrange(9)
    if choice == 0:
        node.input[0] = "nowhere"
        what = "dangling input"
    elif choice == 1:
        node.op_type = rng.choice(["NoSuchOp", "Loop", "If", "Resize", "Reshape", "Gather"])
        what = f"op changed to {node.op_type}"
    elif choice == 2:
        node.input[0] = node.output[0]
        what = "a node reads its own output"
    elif choice == 3:
        init = rng.choice(list(g.initializer))
        init.dims[0] = rng.choice([2**40, -5, 0])
        what = f"initializer dim {init.dims[0]}"
    elif choice == 4:
        init = rng.choice(list(g.initializer))
        init.data_type = rng.choice([TensorProto.INT64, TensorProto.STRING, TensorProto.BOOL, 999])
        what = "initializer type changed"
    elif choice == 5:
        g.node.append(helper.make_node("Constant", [], ["s"], value=helper.make_tensor(
            "s", TensorProto.STRING, [1], [b"\xff\xfe\x80"])))
        g.output.append(helper.make_tensor_value_info("s", TensorProto.STRING, [1]))
        what = "a non-UTF-8 string constant"
    elif choice == 6:
        body = helper.make_graph(
            [helper.make_node("Identity", ["v"], ["v_out"]), helper.make_node("Identity", ["c"], ["c_out"])], "b",
            [helper.make_tensor_value_info("i", TensorProto.INT64, []),
             helper.make_tensor_value_info("c", TensorProto.BOOL, []),
             helper.make_tensor_value_info("v", TensorProto.FLOAT, None)],
            [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
             helper.make_tensor_value_info("v_out", TensorProto.FLOAT, None)])
        g.node.extend([helper.make_node("Constant", [], ["M"], value=helper.make_tensor("M", TensorProto.INT64, [],
                                                                                         [2**62])),
                       helper.make_node("Constant", [], ["T"], value=helper.make_tensor("T", TensorProto.BOOL, [],
                                                                                         [True])),
                       helper.make_node("Loop", ["M", "T", g.output[0].name], ["looped"], body=body)])
        g.output[0].name = "looped"
        what = "an endless loop"
    elif choice == 7:
        shape = helper.make_tensor("shape", TensorProto.INT64, [1], [1 << 29])
        g.node.extend([helper.make_node("Constant", [], ["bs"], value=shape),
                       helper.make_node("ConstantOfShape", ["bs"], ["b1"]),
                       helper.make_node("ConstantOfShape", ["bs"], ["b2"]),
                       helper.make_node("Add", ["b1", "b2"], ["b3"]),
                       helper.make_node("ReduceSum", ["b3"], ["b4"], keepdims=0)])
        g.output.append(helper.make_tensor_value_info("b4", TensorProto.FLOAT, []))
        what = "a folding bomb"
    else:
        g.value_info.append(helper.make_tensor_value_info(node.output[0], TensorProto.INT64, None))
        g.output[0].type.tensor_type.elem_type = TensorProto.INT32
        what = "types that disagree"
    onnx.save(model, path)
    return what


# -- per format --------------------------------------------------------------------------------------------
def mutate(fmt: str, path: Path, rng: random.Random, marker) -> str:
    """Mutate the seed copy at `path` (a file, or a folder for SavedModel and code folders)."""
    target = path
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix != ".py")
        if fmt == "safetensors":
            files = [path / "weights.safetensors", path / "tensorbridge.json"]
        target = rng.choice(files)
    structured = {"onnx": mutate_onnx, "pt2": pt2_payload}
    roll = rng.random()
    if fmt in structured and roll < 0.35:
        return structured[fmt](target, rng, marker)
    if target.suffix in (".keras", ".pt2") and roll < 0.7:
        return mutate_zip(target, rng, marker, ("config.json", "model.json", "_config.json"))
    data = target.read_bytes()
    if fmt in ("tbir", "safetensors") and target.suffix in (".tbir", ".safetensors") and roll < 0.6:
        return f"{target.name}: " + _mutate_safetensors_header(target, data, rng, marker)
    mutation = rng.choice(BYTE_MUTATIONS)
    data, what = mutation(data, rng) if data else (b"\x00", "empty file")
    target.write_bytes(data)
    return f"{target.name}: {what}"


def _mutate_safetensors_header(target: Path, data: bytes, rng: random.Random, marker) -> str:
    """A structural change to a safetensors header (and the graph JSON inside a .tbir's)."""
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.get("__metadata__", {})
    if "tensorbridge.graph" in meta and rng.random() < 0.6:
        graph, what = mutate_json(json.loads(meta["tensorbridge.graph"]), rng, marker)
        meta["tensorbridge.graph"] = json.dumps(graph)
    else:
        header, what = mutate_json(header, rng, marker)
    blob = json.dumps(header).encode()
    target.write_bytes(struct.pack("<Q", len(blob)) + blob + data[8 + n:])
    return what
