"""ONNX's own cases beyond the three per op that the support matrix records, which once computed something else
or crashed in a target: each now matches the reference there, or is refused with its reason."""

from __future__ import annotations

import pytest

from tests.cases.catalogue import cases
from tests.cases.corpus import run_out

#: (op, case, target) -> how the case ends: "pass", or the start of the refusal
VARIANTS = {
    ("Clip", "test_clip_min_greater_than_max", "keras"): "pass",  # once the input clipped as if min <= max
    ("Div", "test_div_int32_trunc", "keras"): "pass",  # once a true division
    ("Div", "test_div_uint32", "keras"): "pass",
    ("Resize", "test_resize_upsample_scales_nearest_axes_2_3", "keras"): "pass",  # axes once not moved to NHWC
    ("Resize", "test_resize_upsample_scales_nearest_axes_3_2", "flax"): "pass",
    ("Resize", "test_resize_downsample_sizes_nearest_not_larger", "keras"): "pass",
    ("ReduceSum", "test_reduce_sum_empty_axes_input_noop", "torch"): "pass",  # once summed every axis
    ("ReduceMax", "test_reduce_max_empty_set", "torch"): "pass",  # a reduction of no elements: its identity
    ("ReduceMin", "test_reduce_min_empty_set", "keras"): "pass",
    ("ReduceSum", "test_reduce_sum_empty_set_non_reduced_axis_zero", "flax"): "pass",
    ("ReduceSum", "test_reduce_sum_empty_set_non_reduced_axis_zero", "tflite"): "refused: an empty output",
    ("Max", "test_max_one_input", "keras"): "pass",
    ("Gemm", "test_gemm_default_matrix_bias", "keras"): "pass",
    ("Transpose", "test_transpose_default", "keras"): "pass",
    ("Flatten", "test_flatten_negative_axis4", "torch"): "pass",
    ("Max", "test_max_uint32", "torch"): "refused: torch's uint32 tensors have kernels only to cast and move",
    ("Max", "test_max_int8", "tflite"): "pass",  # computed in int32: LiteRT has no int8 MAXIMUM outside quantization
    ("Equal", "test_equal_uint8", "tflite"): "pass",  # LiteRT's interpreter once aborted on a uint8 EQUAL
    ("Greater", "test_greater_int16", "tflite"): "pass",
    ("Add", "test_add_int8", "tflite"): "refused: LiteRT's Add takes int8 only in quantized models",
    ("Pow", "test_pow_types_int64_int64", "tflite"): "refused: LiteRT's POW takes no int64",
    # an empty string input whose uses fold away once crashed the writers
    ("RegexFullMatch", "test_regex_full_match_empty", "torch"): "refused: PyTorch has no string tensors",
    ("RegexFullMatch", "test_regex_full_match_empty", "flax"): "refused: JAX has no string arrays",
    ("Equal", "test_equal_string", "keras"): "refused: keras.ops has no string operations",
    ("Cast", "test_cast_FLOAT_to_FLOAT8E4M3FN", "torch"): "refused: PyTorch code holds no float8e4m3fn tensors",
    ("Cast", "test_cast_FLOAT_to_FLOAT8E4M3FN", "coreml"): "refused: Core ML has no float8e4m3fn tensors",
    ("Unsqueeze", "test_unsqueeze_three_axes", "coreml"): "error: ModelError: coremltools refused the program",
    ("Trilu", "test_tril_out_pos", "keras"): "pass",  # an offset beyond the matrix once failed in TensorFlow
}


@pytest.mark.parametrize("op, name, target", sorted(VARIANTS))
def test_an_onnx_case_ends_as_recorded(tmp_path, op, name, target):
    case = next(c for c in cases(op, limit=60) if c.name == name)
    result, _ = run_out(case, target, tmp_path)
    assert result.startswith(VARIANTS[(op, name, target)]), result
