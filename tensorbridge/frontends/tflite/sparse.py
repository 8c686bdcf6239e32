"""TFLite sparse constants (a tensor's SparsityParameters, what DENSIFY expands) made dense at import.

A sparse tensor stores only its listed values. Its dense shape is split into the original dims
(each divided by its block size when `block_map` blocks it) followed by one dim per block; the
storage visits those dims in `traversal_order`, one level each: a DENSE level enumerates all
its coordinates, a SPARSE_CSR level lists the present ones (`segments[p]:segments[p+1]` of
`indices` for parent position p). The last level's positions index the stored values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tensorbridge.errors import ModelError

DENSE, SPARSE_CSR = 0, 1
_INDEX_VECTORS = {1: "Int32Vector", 2: "Uint16Vector", 3: "Uint8Vector"}


@dataclass
class Level:
    """One storage level: DENSE with `size` coordinates, or SPARSE_CSR with `segments` and `indices`."""

    format: int
    size: int = 0
    segments: np.ndarray | None = None
    indices: np.ndarray | None = None


def densify(values: np.ndarray, shape: tuple[int, ...], traversal_order, block_map, levels: list[Level]) -> np.ndarray:
    """The dense tensor of `shape` that the sparse storage describes (zeros where nothing is stored)."""
    rank = len(shape)
    order = [int(d) for d in traversal_order]
    blocks = [int(d) for d in block_map]
    if len(levels) != len(order) or sorted(order) != list(range(rank + len(blocks))):
        raise ModelError("sparse tensor: traversal order and dimension metadata disagree")
    coords = np.zeros((1, len(order)), np.int64)  # one row per stored position so far, in storage order
    for depth, level in enumerate(levels):
        if level.format == DENSE:
            parents = np.repeat(np.arange(len(coords)), level.size)
            coord = np.tile(np.arange(level.size), len(coords))
        elif level.format == SPARSE_CSR and level.segments is not None and level.indices is not None:
            seg = level.segments.astype(np.int64)
            if len(seg) != len(coords) + 1 or np.any(np.diff(seg) < 0) or seg[-1] > len(level.indices):
                raise ModelError("sparse tensor: array segments do not match the level above")
            parents = np.repeat(np.arange(len(coords)), np.diff(seg))
            coord = level.indices.astype(np.int64)[seg[0]:seg[-1]]
        else:
            raise ModelError(f"sparse tensor: dimension format {level.format} is not supported")
        coords = coords[parents]
        coords[:, depth] = coord
    flat = np.asarray(values).reshape(-1)
    if len(coords) != flat.size:
        raise ModelError(f"sparse tensor: {flat.size} stored values for {len(coords)} positions")
    expanded = np.empty_like(coords)
    expanded[:, order] = coords
    dense_index = expanded[:, :rank].copy()
    for k, dim in enumerate(blocks):
        block = levels[order.index(rank + k)]
        if block.format != DENSE or not block.size:
            raise ModelError("sparse tensor: a block dimension must be dense")
        dense_index[:, dim] = dense_index[:, dim] * block.size + expanded[:, rank + k]
    if np.any(dense_index >= np.asarray(shape, np.int64)) or np.any(dense_index < 0):
        raise ModelError("sparse tensor: an index lies outside the tensor's shape")
    out = np.zeros(shape, flat.dtype)
    out[tuple(dense_index.T)] = flat
    return out


def read_sparse(t, values: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The dense value of flatbuffer tensor `t` whose buffer holds its stored `values`."""
    import tflite

    sp = t.Sparsity()
    levels = []
    for i in range(sp.DimMetadataLength()):
        m = sp.DimMetadata(i)
        levels.append(Level(m.Format(), m.DenseSize(), _index_vector(tflite, m.ArraySegmentsType(), m.ArraySegments()),
                            _index_vector(tflite, m.ArrayIndicesType(), m.ArrayIndices())))
    order = sp.TraversalOrderAsNumpy() if sp.TraversalOrderLength() else range(len(levels))
    blocks = sp.BlockMapAsNumpy() if sp.BlockMapLength() else []
    return densify(values, shape, order, blocks, levels)


def _index_vector(tflite, kind: int, table) -> np.ndarray | None:
    if kind not in _INDEX_VECTORS or table is None:
        return None
    vec = getattr(tflite, _INDEX_VECTORS[kind])()
    vec.Init(table.Bytes, table.Pos)
    return vec.ValuesAsNumpy() if vec.ValuesLength() else np.zeros(0, np.int64)
