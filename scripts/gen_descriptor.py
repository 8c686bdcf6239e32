"""Compile a vendored .proto into its descriptor (a serialized FileDescriptorSet) beside it:
tensorbridge/formats/caffe/caffe.proto -> caffe_descriptor.pb, tensorbridge/formats/paddle/framework.proto ->
framework_descriptor.pb.

The descriptor, not generated Python code, is what the package ships: protobuf builds the message classes from it at
run time with any protobuf version the user has. Needs `grpcio-tools` (which carries protoc); run it after editing
a .proto:  python scripts/gen_descriptor.py caffe|paddle
"""

import sys
from pathlib import Path

from grpc_tools import protoc

FORMATS = Path(__file__).resolve().parents[1] / "tensorbridge" / "formats"
PROTOS = {"caffe": FORMATS / "caffe" / "caffe.proto", "paddle": FORMATS / "paddle" / "framework.proto"}

if __name__ == "__main__":
    proto = PROTOS[sys.argv[1]]
    out = proto.with_name(f"{proto.stem}_descriptor.pb")
    raise SystemExit(protoc.main(["protoc", f"-I{proto.parent}", f"--descriptor_set_out={out}", str(proto)]))
