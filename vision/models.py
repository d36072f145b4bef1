"""Where the shipped ONNX models are, and one way to open them."""

from __future__ import annotations

import os
from pathlib import Path

import onnxruntime as ort

#: The repository's models/ folder; KNIFFEL_MODELS overrides it.
MODELS_DIR = Path(os.environ.get("KNIFFEL_MODELS",
                                 Path(__file__).resolve().parent.parent / "models"))
DETECTOR_PATH = MODELS_DIR / "detector.onnx"
CLASSIFIER_PATH = MODELS_DIR / "classifier.onnx"
EMBEDDER_PATH = MODELS_DIR / "embedder.onnx"
REFINER_PATH = MODELS_DIR / "refiner.onnx"


def body_path(detector_path: Path) -> Path:
    """Where a detector's body head lies (vision.detector.BodyOffsets): beside it,
    `detector.onnx`'s in `detector.body.onnx`."""
    return detector_path.with_suffix(".body.onnx")


class ModelMissingError(RuntimeError):
    """A model file is missing or cannot be loaded."""


def open_session(path: Path, threads: int = 1) -> ort.InferenceSession:
    """An onnxruntime CPU session; one thread by default (the Pi shares its cores with the
    camera loop and the web server)."""
    if not path.is_file():
        raise ModelMissingError(f"model {path} is missing: run `make models`")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    try:
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own exception types
        raise ModelMissingError(f"model {path} cannot be loaded: {exc}") from None


def metadata(session: ort.InferenceSession) -> dict[str, str]:
    return dict(session.get_modelmeta().custom_metadata_map)
