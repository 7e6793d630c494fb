"""Fit a static query encoder to the site model (``statictable``), once per model, and cache it.

Three steps, all against the model itself (the *teacher*), nothing downloaded:

1. **Prior** (Model2Vec's distillation): each reachable token's row is the teacher's vector of
   that token alone (``[CLS] token [SEP]`` run through the exported ONNX graph).
2. **Regression** (tokenlearn's idea, in closed form): over a corpus of short texts that ships
   in the installed packages (``staticcorpus.packaged_corpus``), the rows are moved so that a
   text's mean row approximates the teacher's vector of the whole text: ridge least squares
   towards the prior, ``min ||A E - Y||^2 + lam ||E - E0||^2`` (A: texts x tokens, each text's
   piece counts over its length; Y: the teacher's vectors), solved for all 384 columns at once
   by conjugate gradients on the normal equations (``ITERATIONS``, fixed, so the result is
   deterministic).
3. **Mapped prior**: ~60 % of the tokens never occur in the corpus, so the regression leaves them
   their prior, which lies elsewhere than the fitted rows. The affine map taking the covered
   tokens' priors to their fitted rows (least squares) is applied to every prior and the
   regression run again from there, ``MAP_ROUNDS`` times: an unseen token gets its prior as the
   fit would have moved it (Chroma's questions, a quarter of whose pieces the corpus never
   shows: cosine to the model 0.575 -> 0.647; docs/decisions/search.md).

The fitted table (float32) is cached beside the model's ONNX export
(``onnx_export.onnx_path(model).parent / static-<FIT_VERSION>.bin``): the first build on a
machine fits it (minutes: the teacher encodes the corpus), later ones read it. A test embedder
(``hashing-<dim>``) gets its prior alone, in memory (its vectors are bags of words: the prior is
exact for words of one piece).
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import xxhash

from pipeline.embedding.models import LocalModel
from pipeline.embedding.statictable import StaticTable, decode, encode, reachable_tokens
from pipeline.embedding.tokenizer_settings import tokenizer_settings
from pipeline.fsutil import write_bytes_atomic
from pipeline.quiet import info

FIT_VERSION = "2"  # bump when the corpus rules or the fit change
RIDGE = 0.01
ITERATIONS = 40
MAP_ROUNDS = 2
MAX_PIECES = 128  # corpus texts are cut here: queries are short
PRIOR_BATCH = 256


def tokenizer_json(model: LocalModel) -> dict:
    import json

    return json.loads((model.directory() / "tokenizer.json").read_text(encoding="utf-8"))


def static_path(model: LocalModel) -> Path:
    from pipeline.embedding.onnx_export import onnx_path

    return onnx_path(model).parent / static_name()


def static_name() -> str:
    """The file name of this ``FIT_VERSION``'s table in a model's export folder."""
    return f"static-{FIT_VERSION}.bin"


def cached_static(model: LocalModel) -> StaticTable | None:
    """The fitted table of ``model`` when it is cached; never fits, never imports a runtime."""
    path = static_path(model)
    if not path.is_file():
        return None
    return decode(path.read_bytes(), source=str(path))


def static_table(model: LocalModel, *, progress: bool = False) -> StaticTable:
    """The cached table of ``model``, fitted now (module docstring) when missing."""
    table = cached_static(model)
    if table is not None:
        return table
    from pipeline.embedding.onnx import OnnxEmbedder
    from pipeline.embedding.staticcorpus import packaged_corpus

    from pipeline.embedding.backends import make_local

    info(f"fitting the static query encoder of {model.name} (once) -> {static_path(model)}")
    teacher = OnnxEmbedder(model, batch_size=64)
    spec = tokenizer_json(model)
    tokens = reachable_tokens(spec)
    prior = onnx_token_vectors(teacher, spec, tokens)
    corpus = packaged_corpus()
    # the corpus through the build's own backend (OpenVINO where installed: 51 texts/s against
    # ONNX Runtime's 7 on this loaded machine; every backend agrees to cosine >= 0.999)
    targets = make_local(model, "auto").embed(corpus, progress=progress)
    table = fit_table(model.name, spec, tokens, prior, corpus, targets, tokenizer=teacher.tokenizer(),
                      path=model.directory() / "tokenizer.json", skip=stop_tokens(tokens))
    _write_atomic(static_path(model), encode(table))
    return table


def stop_tokens(tokens: list[str]) -> frozenset[str]:
    """The tokens a fit leaves out (zero rows, never fetched by a client): the lexical index's
    stop words (``simhash.STOP_WORDS``) and single punctuation characters. A question's row
    requests drop by ~40 % (docs/decisions/search.md "A static query encoder")."""
    from pipeline.simhash import STOP_WORDS

    return frozenset(t for t in tokens if t in STOP_WORDS or (len(t) == 1 and not t.isalnum()))


@functools.lru_cache(maxsize=2)
def hashing_table(dimension: int, model: LocalModel) -> StaticTable:
    """The test embedder's table over ``model``'s vocabulary: its prior alone (module docstring).
    Computed once a process (a second build reuses it); its rows are read-only."""
    from pipeline.embedding.hashing import HashingEmbedder

    spec = tokenizer_json(model)
    tokens = reachable_tokens(spec)
    prefix = spec["model"].get("continuing_subword_prefix", "##")
    teacher = HashingEmbedder(dimension)
    prior = teacher.embed([t[len(prefix):] if t.startswith(prefix) and len(t) > len(prefix) else t for t in tokens])
    table = fit_table(teacher.name, spec, tokens, prior, [], np.zeros((0, dimension), dtype=np.float32),
                      path=model.directory() / "tokenizer.json")
    table.rows.setflags(write=False)
    return table


def onnx_token_vectors(teacher, spec: dict, tokens: list[str]) -> np.ndarray:
    """The teacher's vector of each token alone: ``[CLS] id [SEP]`` through its session."""
    vocab = spec["model"]["vocab"]
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    session = teacher.session()
    out = np.zeros((len(tokens), 0), dtype=np.float32)
    parts = []
    for start in range(0, len(tokens), PRIOR_BATCH):
        ids = np.array([[cls, vocab[t], sep] for t in tokens[start : start + PRIOR_BATCH]], dtype=np.int64)
        parts.append(teacher._run(session, ids, np.ones_like(ids)))
    out = np.vstack(parts).astype(np.float32)
    return out


def corpus_matrix(corpus: list[str], tokens: list[str], tokenizer, skip: frozenset[str] = frozenset()):
    """A (texts x tokens) CSR matrix: each text's piece counts over its piece count (its mean),
    pieces outside ``tokens`` or in ``skip`` ignored; texts cut at ``MAX_PIECES`` pieces."""
    from scipy.sparse import csr_matrix

    index = {t: i for i, t in enumerate(tokens) if t not in skip}
    rows, cols, vals = [], [], []
    for j, encoding in enumerate(tokenizer.encode_batch(corpus, add_special_tokens=False)):
        pieces = [index[p] for p in encoding.tokens[:MAX_PIECES] if p in index]
        for i in pieces:
            rows.append(j)
            cols.append(i)
            vals.append(1.0 / len(pieces))
    return csr_matrix((vals, (rows, cols)), shape=(len(corpus), len(tokens)), dtype=np.float64)


def fit_table(name: str, spec: dict, tokens: list[str], prior: np.ndarray, corpus: list[str], targets: np.ndarray,
              *, tokenizer=None, path: Path | None = None, ridge: float = RIDGE, iterations: int = ITERATIONS,
              skip: frozenset[str] = frozenset()) -> StaticTable:
    """The table of ``tokens`` (module docstring): ``prior`` moved by the regression of ``corpus``
    onto ``targets``, then mapped and regressed again (none of it when the corpus is empty).
    Tokens in ``skip`` get zero rows and are left out of the regression's means (the others
    absorb what they carried)."""
    left_out = np.array([t in skip for t in tokens], dtype=bool)
    rows = np.asarray(prior, dtype=np.float64).copy()
    rows[left_out] = 0.0
    if corpus:
        a = corpus_matrix(corpus, tokens, tokenizer, skip)
        rows = fit_rows(rows, a, np.asarray(targets, dtype=np.float64), left_out, ridge, iterations)
    source = {"fit": FIT_VERSION, "ridge": ridge, "iterations": iterations, "map_rounds": MAP_ROUNDS,
              "texts": len(corpus), "skipped": len(skip),
              "corpus_xxh64": xxhash.xxh64("\n".join(corpus).encode("utf-8")).hexdigest()}
    ascii_count = sum(1 for t in tokens if t.isascii())
    return StaticTable(name, list(tokens), rows.astype(np.float32), tokenizer_settings(spec, path), ascii_count, "float32", source)


def fit_rows(prior: np.ndarray, a, targets: np.ndarray, left_out: np.ndarray, ridge: float = RIDGE,
             iterations: int = ITERATIONS, rounds: int = MAP_ROUNDS) -> np.ndarray:
    """Rows (float64) whose ``a``-weighted means approximate ``targets``: ``prior`` regressed
    (``ridge_solve``), then ``rounds`` times the affine map from the covered tokens' priors (a
    column of ``a`` not all zero) to their rows applied to every prior, and regressed again
    from there (module docstring). Rows of ``left_out`` are zero. With no more covered tokens
    than the map has parameters per dimension, the map is not fitted."""
    def regress(start: np.ndarray) -> np.ndarray:
        start[left_out] = 0.0
        rows = start + ridge_solve(a, targets - a @ start, ridge, iterations)
        rows[left_out] = 0.0
        return rows

    rows = regress(np.array(prior, dtype=np.float64))
    covered = (np.bincount(a.indices, minlength=a.shape[1]) > 0) & ~left_out
    if covered.sum() <= prior.shape[1] + 1:
        return rows
    affine = np.hstack([prior, np.ones((len(prior), 1))])
    for _ in range(rounds):
        mapping, *_ = np.linalg.lstsq(affine[covered], rows[covered], rcond=None)
        rows = regress(affine @ mapping)
    return rows


def ridge_solve(a, r: np.ndarray, ridge: float, iterations: int) -> np.ndarray:
    """``argmin_X ||a X - r||^2 + ridge ||X||^2`` by CGLS, every column of ``r`` at once, a
    fixed number of steps (deterministic)."""
    x = np.zeros((a.shape[1], r.shape[1]), dtype=np.float64)
    residual = r.copy()
    s = a.T @ residual
    p = s.copy()
    gamma = np.einsum("ij,ij->j", s, s)
    for _ in range(iterations):
        q = a @ p
        delta = np.einsum("ij,ij->j", q, q) + ridge * np.einsum("ij,ij->j", p, p)
        alpha = np.divide(gamma, delta, out=np.zeros_like(gamma), where=delta > 0)
        x += alpha * p
        residual -= alpha * q
        s = a.T @ residual - ridge * x
        gamma_next = np.einsum("ij,ij->j", s, s)
        beta = np.divide(gamma_next, gamma, out=np.zeros_like(gamma), where=gamma > 0)
        p = s + beta * p
        gamma = gamma_next
    return x


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(path, data)
