"""Generate model/weights.npz once, from a fixed seed (numpy only, no torch).

The weights are committed and fingerprinted in lockkit.toml; this script only
documents where they came from. It uses the standard library's ``random.random``,
whose sequence for a given seed Python promises never to change, rather than a
numpy generator whose streams may change between numpy releases, and it writes
the archive with fixed zip timestamps so the same seed gives the same bytes.

    python make_weights.py            # rewrites model/weights.npz
    python make_weights.py --out DIR  # writes DIR/weights.npz (to compare)

Regenerating changes the model: rerun make_reference.py and update the
fingerprints in lockkit.toml (the reference gets a new identity).
"""

from __future__ import annotations

import argparse
import io
import random
import zipfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SEED = 20240751
BUCKETS, HIDDEN, DIM = 256, 32, 16
# (name, shape, half-width of the uniform range)
ARRAYS = (("embedding", (BUCKETS, HIDDEN), 1.0),
          ("projection", (HIDDEN, DIM), 0.5),
          ("bias", (DIM,), 0.1))


def generate(seed: int = SEED) -> dict[str, np.ndarray]:
    """Uniform values in [-a, a], drawn in a fixed order from one seeded stream."""
    rng = random.Random(seed)
    out = {}
    for name, shape, half in ARRAYS:
        count = int(np.prod(shape))
        values = [(2.0 * rng.random() - 1.0) * half for _ in range(count)]
        out[name] = np.asarray(values, dtype=np.float64).reshape(shape).astype(np.float32)
    return out


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Like np.savez, but with fixed member timestamps: reproducible bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, array in arrays.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.ascontiguousarray(array), version=(1, 0),
                                      allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            archive.writestr(info, buffer.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "model",
                        help="folder for weights.npz (default: model/ next to this script)")
    args = parser.parse_args()
    path = args.out / "weights.npz"
    arrays = generate()
    write_npz(path, arrays)
    shapes = ", ".join(f"{k} {list(v.shape)}" for k, v in arrays.items())
    print(f"wrote {path} (seed {SEED}: {shapes}, float32)")


if __name__ == "__main__":
    main()
