"""Embed the identified sample texts with a tiny, fixed model (torch + numpy only).

    python embed.py --out DIR [--device cpu|cuda:0|xpu:0|mps]

reads data/sample.jsonl and model/weights.npz (paths relative to this file) and
writes DIR/embeddings.npy (float32, [n, 16]), DIR/ids.json (the identifiers, in
order) and DIR/run.json (the settings that produced them: device, determinism, TF32).
lockkit passes the platform's device (``{device}`` in lockkit.toml); the default is
the CPU.

Everything the result depends on is stated here, so a rebuilt environment can be
judged against the committed reference:
- preprocessing: NFC, lowercase, whitespace collapsed to single spaces, padded
  with one space on each side;
- tokens: character trigrams hashed with zlib.crc32 of their UTF-8 bytes modulo
  the number of buckets (never Python's hash(), which is salted per process);
- model: mean of the bucket embeddings (EmbeddingBag) -> x @ projection + bias ->
  tanh -> L2-normalised, all float32 on the device (tokens are made on the CPU);
- determinism: torch.use_deterministic_algorithms(True), one intra-op and one
  inter-op thread, and on CUDA cuBLAS's fixed workspace (CUBLAS_WORKSPACE_CONFIG,
  which deterministic cuBLAS requires). Float32 sums may still be reordered by a
  different build, CPU or GPU, which is why lockkit compares under a declared
  tolerance. TF32 is left as torch sets it (off for float32 matmuls) and recorded:
  a site that turns it on is caught by the tolerance (see lockkit.toml).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import unicodedata
import zlib
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
SAMPLE = HERE / "data" / "sample.jsonl"
WEIGHTS = HERE / "model" / "weights.npz"


def set_determinism() -> None:
    """One thread and deterministic kernels: the same build gives the same bits."""
    # Before any cuBLAS handle exists: deterministic algorithms refuse cuBLAS matmuls
    # without it (CUDA >= 10.2); ignored on other devices.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set once in this process (e.g. imported twice)
        pass
    torch.manual_seed(0)  # nothing is random below; stated so a change cannot hide


def read_sample(path: Path) -> tuple[list[str], list[str]]:
    """The identified texts, in file order; a bad line stops with its number."""
    ids: list[str] = []
    texts: list[str] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            ident, text = record["id"], record["text"]
        except (ValueError, KeyError, TypeError) as exc:
            sys.exit(f"{path.name}:{number}: expected {{\"id\": ..., \"text\": ...}}: {exc}")
        if not isinstance(ident, str) or not isinstance(text, str) or ident in ids:
            sys.exit(f"{path.name}:{number}: id and text must be strings, ids unique")
        ids.append(ident)
        texts.append(text)
    return ids, texts


def normalise(text: str) -> str:
    """NFC, lowercase, single spaces, one space of padding each side."""
    text = unicodedata.normalize("NFC", text).lower()
    return " " + " ".join(text.split()) + " "


def buckets_of(text: str, buckets: int) -> list[int]:
    """Stable bucket ids of the character trigrams (crc32, not the salted hash())."""
    padded = normalise(text)
    grams = [padded[i:i + 3] for i in range(len(padded) - 2)] or [padded]
    return [zlib.crc32(gram.encode("utf-8")) % buckets for gram in grams]


class TinyEmbedder(torch.nn.Module):
    """Mean of bucket embeddings -> linear -> tanh -> unit length."""

    def __init__(self, weights: dict[str, np.ndarray]) -> None:
        super().__init__()
        embedding = torch.from_numpy(weights["embedding"])
        self.bag = torch.nn.EmbeddingBag.from_pretrained(embedding, mode="mean", freeze=True)
        self.proj = torch.nn.Linear(embedding.shape[1], weights["projection"].shape[1])
        with torch.no_grad():
            self.proj.weight.copy_(torch.from_numpy(weights["projection"].T))
            self.proj.bias.copy_(torch.from_numpy(weights["bias"]))

    def forward(self, tokens: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        hidden = torch.tanh(self.proj(self.bag(tokens, offsets)))
        return torch.nn.functional.normalize(hidden, p=2.0, dim=1)


def load_weights(path: Path) -> dict[str, np.ndarray]:
    """float32 arrays from a plain .npz: no pickle is ever loaded."""
    with np.load(path, allow_pickle=False) as archive:
        return {name: archive[name].astype(np.float32) for name in archive.files}


def embed(texts: list[str], weights: dict[str, np.ndarray], device: str = "cpu"
          ) -> np.ndarray:
    """All texts in one batch: flat token list plus the offset where each text starts."""
    model = TinyEmbedder(weights).eval().to(device)
    buckets = weights["embedding"].shape[0]
    lists = [buckets_of(text, buckets) for text in texts]
    offsets = np.cumsum([0] + [len(t) for t in lists[:-1]])
    tokens = torch.tensor([b for t in lists for b in t], dtype=torch.int64)
    with torch.inference_mode():
        out = model(tokens.to(device), torch.from_numpy(offsets.astype(np.int64)).to(device))
    return out.cpu().numpy().astype(np.float32, copy=False)


def settings(device: str) -> dict[str, object]:
    """What decides the numbers besides the code and the weights: the device, the
    determinism and the reduced-precision (TF32) switches, where this torch has them."""
    backends = torch.backends
    matmul = getattr(getattr(backends, "cuda", None), "matmul", None)
    cudnn = getattr(backends, "cudnn", None)
    return {"torch": torch.__version__, "numpy": np.__version__, "device": device,
            "threads": torch.get_num_threads(),
            "deterministic": torch.are_deterministic_algorithms_enabled(),
            "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
            "tf32": {"cuda.matmul": getattr(matmul, "allow_tf32", None),
                     "cudnn": getattr(cudnn, "allow_tf32", None)}}


def write_outputs(out: Path, ids: list[str], vectors: np.ndarray, device: str) -> None:
    """The two result files lockkit re-reads, plus the settings that made them."""
    out.mkdir(parents=True, exist_ok=True)
    np.save(out / "embeddings.npy", vectors, allow_pickle=False)
    (out / "ids.json").write_text(json.dumps(ids, indent=1) + "\n", encoding="utf-8")
    run = {**settings(device), "dtype": str(vectors.dtype),
           "tokens": "nfc+lower+collapse-spaces, char 3-grams, zlib.crc32 % buckets"}
    (out / "run.json").write_text(json.dumps(run, indent=1) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description="Embed the sample texts.")
    parser.add_argument("--out", type=Path, required=True, help="folder for the outputs")
    parser.add_argument("--device", default="cpu",
                        help="torch device to run on: cpu (default), cuda:0, xpu:0, mps")
    args = parser.parse_args()
    set_determinism()
    ids, texts = read_sample(SAMPLE)
    vectors = embed(texts, load_weights(WEIGHTS), args.device)
    write_outputs(args.out, ids, vectors, args.device)
    print(f"embedded {len(ids)} texts -> {args.out / 'embeddings.npy'} "
          f"{list(vectors.shape)} {vectors.dtype} (torch {torch.__version__}, "
          f"{args.device}, 1 thread)")


if __name__ == "__main__":
    main()
