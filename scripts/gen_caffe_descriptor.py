"""Compile tensorbridge/formats/caffe/caffe.proto into caffe_descriptor.pb (a serialized FileDescriptorSet).

The descriptor, not generated Python code, is what the package ships: protobuf builds the message classes from it at
run time with any protobuf version the user has. Needs `grpcio-tools` (which carries protoc); run it after editing
caffe.proto:  python scripts/gen_caffe_descriptor.py
"""

from pathlib import Path

from grpc_tools import protoc

FOLDER = Path(__file__).resolve().parents[1] / "tensorbridge" / "formats" / "caffe"

if __name__ == "__main__":
    status = protoc.main(["protoc", f"-I{FOLDER}", f"--descriptor_set_out={FOLDER / 'caffe_descriptor.pb'}",
                          str(FOLDER / "caffe.proto")])
    raise SystemExit(status)
