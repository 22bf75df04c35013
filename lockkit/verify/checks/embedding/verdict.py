"""The application check: the host-side verdict on what [verify.embedding] declares.

A matrix product passing in the rebuilt venv proves nothing about preprocessing
or weights, so ``verify`` ends by running the project's own embedding command on
its committed sample, then re-reading the files it wrote. The order of the checks
is fixed (structure first, then quality under the user's declared tolerance) and
the first failure stops them, so the report names one cause, not its echoes.
Only numpy is needed here: the host never imports torch. The table itself is read and
validated with the project's config (:mod:`lockkit.config.checks.embedding`).
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lockkit._internal.fs import sha256_file
from lockkit._internal.parse import parse_json
from lockkit.config.checks.embedding import EmbeddingConfig
from lockkit.report.records import ApplicationResult, CheckResult, Fingerprint

__all__ = [
    "check_fingerprints",
    "file_hashes",
    "check_outputs",
    "command",
]


def command(cfg: EmbeddingConfig, python: Path, out: Path, device: str) -> list[str]:
    """The argument list to run in the project root, under ``cfg.timeout`` seconds;
    *device* is the platform's torch device (``cpu``, ``cuda:0``, ``xpu:0``, ``mps``)."""
    return [part.format(python=str(python), out=str(out), device=device)
            for part in cfg.command]


def file_hashes(cfg: EmbeddingConfig, root: Path) -> list[tuple[str, str, str | None]]:
    """Each declared file as (path, expected sha256, actual sha256 or None if missing)."""
    return [(path, expected, sha256_file(root / path) if (root / path).is_file() else None)
            for path, expected in cfg.fingerprints]


def check_fingerprints(cfg: EmbeddingConfig, root: Path) -> list[CheckResult]:
    """Before the run: the code, data, weights and reference are the declared ones."""
    found = [Fingerprint(path=p, expected=e, actual=a) for p, e, a in file_hashes(cfg, root)]
    return [CheckResult(name=f.name, passed=f.passed, detail=f.detail) for f in found]


def _result(checks: list[CheckResult] | tuple[CheckResult, ...],
            **numbers: Any) -> ApplicationResult:
    """The ordered checks of one run; the numbers exist once the tolerance was computed."""
    return ApplicationResult(kind="embedding", checks=tuple(checks), **numbers)


@dataclass(frozen=True, kw_only=True)
class _Loaded:
    sample_ids: list[str]
    ids: list[str]
    vectors: np.ndarray
    reference: np.ndarray
    reference_ids: list[str]


def check_outputs(cfg: EmbeddingConfig, root: Path, out: Path) -> ApplicationResult:
    """Re-read the output folder and judge it; the first failure ends the checks."""
    loaded, files = _load(cfg, root, out)
    checks = [files]
    if loaded is None:
        return _result(checks)
    for step in (_count, _ids, _dim, _dtype, _finite, _reference):
        checks.append(step(cfg, loaded))
        if not checks[-1].passed:
            return _result(checks)
    return _tolerance(cfg, loaded, checks)


def _load(cfg: EmbeddingConfig, root: Path, out: Path) -> tuple[_Loaded | None, CheckResult]:
    """Every file present and readable (without pickle), or the list of what is not."""
    files: dict[str, tuple[str, Path, Any]] = {  # field of _Loaded: (label, path, reader)
        "vectors": ("output " + cfg.embeddings, out / cfg.embeddings, _array),
        "ids": ("output " + cfg.ids, out / cfg.ids, _id_list),
        "sample_ids": ("sample " + cfg.sample, root / cfg.sample, _sample_ids),
        "reference": ("reference " + cfg.reference, root / cfg.reference, _array),
        "reference_ids": ("reference-ids " + cfg.reference_ids, root / cfg.reference_ids,
                          _id_list),
    }
    missing = [label for label, path, _ in files.values() if not path.is_file()]
    if missing:
        return None, CheckResult(name="files", passed=False,
                                 detail="missing: " + ", ".join(missing))
    values: dict[str, Any] = {}  # _Loaded's fields by name, each as its reader returns it
    for name, (label, path, reader) in files.items():
        try:
            values[name] = reader(path, cfg.key) if reader is _array else reader(path)
        except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as exc:
            return None, CheckResult(name="files", passed=False,
                                     detail=f"unreadable {label}: {exc}")
    return _Loaded(**values), CheckResult(name="files", passed=True,
                                          detail=f"{len(files)} files read")


def _array(path: Path, key: str | None) -> np.ndarray:
    """A .npy, or one member of a .npz; pickled (object) arrays are refused."""
    if path.suffix != ".npz":
        return np.asarray(np.load(path, allow_pickle=False))
    with np.load(path, allow_pickle=False) as archive:
        if key is None and len(archive.files) != 1:
            raise ValueError(f"holds {archive.files}: set verify.embedding.key")
        return np.asarray(archive[key or archive.files[0]])


def _id_list(path: Path) -> list[str]:
    ids = parse_json(path.read_text(encoding="utf-8"), path)
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise ValueError("expected a JSON list of identifier strings")
    return ids


def _sample_ids(path: Path) -> list[str]:
    """The identifiers of a JSON-lines sample, in order; duplicates are an error."""
    ids: list[str] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        record = parse_json(line, f"{path} line {number}")
        ident = record.get("id") if isinstance(record, dict) else None
        if not isinstance(ident, str) or ident in ids:
            raise ValueError(f"line {number}: expected a unique string 'id', got {ident!r}")
        ids.append(ident)
    return ids


def _count(cfg: EmbeddingConfig, data: _Loaded) -> CheckResult:
    expected, rows = len(data.sample_ids), data.vectors.shape[0] if data.vectors.ndim else None
    passed = rows == expected == len(data.ids)
    return CheckResult(name="count", passed=passed, detail=f"{expected} sample identifiers, "
                 f"{rows} vectors, {len(data.ids)} output identifiers")


def _first_mismatch(expected: list[str], got: list[str]) -> str | None:
    for row, (want, have) in enumerate(zip(expected, got, strict=False)):
        if want != have:
            return f"row {row}: expected {want!r}, got {have!r}"
    return None


def _ids(cfg: EmbeddingConfig, data: _Loaded) -> CheckResult:
    mismatch = _first_mismatch(data.sample_ids, data.ids)
    return CheckResult(name="ids", passed=mismatch is None,
                 detail=mismatch or f"{len(data.ids)} identifiers in sample order")


def _dim(cfg: EmbeddingConfig, data: _Loaded) -> CheckResult:
    shape, want = list(data.vectors.shape), [len(data.sample_ids), cfg.dim]
    return CheckResult(name="dim", passed=shape == want, detail=f"expected {want}, got {shape}")


def _dtype(cfg: EmbeddingConfig, data: _Loaded) -> CheckResult:
    got = data.vectors.dtype
    return CheckResult(name="dtype", passed=got == np.dtype(cfg.dtype),
                 detail=f"expected {cfg.dtype}, got {got}")


def _finite(cfg: EmbeddingConfig, data: _Loaded) -> CheckResult:
    bad = ~np.isfinite(data.vectors)
    if not bad.any():
        return CheckResult(name="finite", passed=True, detail="all values finite")
    row = int(np.flatnonzero(bad.any(axis=1))[0])
    return CheckResult(name="finite", passed=False, detail=f"{int(bad.sum())} non-finite values; "
                 f"first in {data.ids[row]!r} (row {row})")


def _reference_problem(cfg: EmbeddingConfig, data: _Loaded) -> str | None:
    want = (len(data.sample_ids), cfg.dim)
    if len(data.reference_ids) != want[0]:
        return f"{len(data.reference_ids)} identifiers for {want[0]} in the sample"
    if mismatch := _first_mismatch(data.sample_ids, data.reference_ids):
        return mismatch
    if data.reference.shape != want:
        return f"shape {list(data.reference.shape)}, expected {list(want)}"
    if not np.isfinite(data.reference).all():
        return "non-finite values"
    return None


def _reference(cfg: EmbeddingConfig, data: _Loaded) -> CheckResult:
    """The reference belongs to this sample: same identifiers, shape, finite values."""
    problem = _reference_problem(cfg, data)
    detail = (f"reference does not match the sample: {problem}; regenerate it and give it a "
              "new fingerprint" if problem else "reference matches the sample")
    return CheckResult(name="reference", passed=problem is None, detail=detail)


def _tolerance(cfg: EmbeddingConfig, data: _Loaded, checks: list[CheckResult]) -> ApplicationResult:
    """Per identifier: max |diff| against atol + rtol*|ref|, and cosine against the floor."""
    got, ref = data.vectors.astype(np.float64), data.reference.astype(np.float64)
    diff = np.abs(got - ref)
    ratio, close = _allclose(cfg, diff, ref)
    cosine = _cosines(got, ref)
    high = cosine >= cfg.min_cosine if cfg.min_cosine is not None else np.ones_like(close)
    failing = ~(close & high)
    # The worst row is the one furthest past (or nearest to) the criterion that decides.
    worst = int(np.argmax(ratio) if cfg.atol is not None and (not close.all() or high.all())
                else np.argmin(cosine))
    ident = data.ids[worst]
    verdict = (f"{int(failing.sum())} of {len(data.ids)} identifiers outside the tolerance"
               if failing.any() else f"{len(data.ids)} identifiers within the tolerance")
    detail = f"{verdict}; worst {ident!r}: " + _worst(cfg, diff[worst].max(), cosine[worst])
    check = CheckResult(name="tolerance", passed=not failing.any(), detail=detail)
    return _result((*checks, check), worst_id=ident,
                   max_abs_diff=float(diff.max()), min_cosine=float(cosine.min()))


def _worst(cfg: EmbeddingConfig, diff: float, cosine: float) -> str:
    text = f"max |diff| {diff:.3e}"
    if cfg.atol is not None:
        text += f" (allowed {cfg.atol:g} + {cfg.rtol:g}*|ref|)"
    text += f", cosine {cosine:.8f}"
    return text + (f" (min {cfg.min_cosine:g})" if cfg.min_cosine is not None else "")


def _allclose(cfg: EmbeddingConfig, diff: np.ndarray,
              ref: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the largest diff/allowed ratio and the numpy.allclose verdict."""
    if cfg.atol is None:
        return np.zeros(len(diff)), np.ones(len(diff), dtype=bool)
    allowed = cfg.atol + (cfg.rtol or 0.0) * np.abs(ref)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(diff == 0, 0.0, diff / allowed)
    return ratio.max(axis=1), (diff <= allowed).all(axis=1)


def _cosines(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Row cosines; two zero vectors count as equal, one zero vector as orthogonal."""
    norms = np.linalg.norm(got, axis=1) * np.linalg.norm(ref, axis=1)
    dots = (got * ref).sum(axis=1)
    both_zero = (np.linalg.norm(got, axis=1) == 0) & (np.linalg.norm(ref, axis=1) == 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        cosine = np.where(norms > 0, dots / norms, 0.0)
    return np.clip(np.where(both_zero, 1.0, cosine), -1.0, 1.0)  # rounding past 1
