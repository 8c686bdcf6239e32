"""File formats read and written without their framework: ONNX protobuf IO, the TFLite flatbuffer writer.

Shared by frontends, backends and registries, so none of them imports another's internals.
"""
