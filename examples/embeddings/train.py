"""Fine-tune the example's embedding model for a few steps, and resume it exactly.

    python train.py --out DIR --steps S --checkpoint CKPT --resume 0|1 [--device DEV]
                    [--break WHAT]

A tiny training loop for `lockkit verify`'s resume check (``[verify.resume]`` in
lockkit.toml; the file contract is in lockkit's docs/howto/checks.md, "Checking a training resume"):
the model of embed.py (imported, not copied), AdamW, a StepLR schedule, a shuffled
DataLoader over the sample with a seeded generator, and one random draw per step from
each of python's, numpy's and torch's generators (token dropping, target noise,
dropout), so that each must be restored for the resumed run to match. ``--device``
(``cpu`` by default; lockkit passes the platform's, ``{device}``) runs it on a GPU,
where dropout draws from the device's own generator: rng.py saves and restores it
beside the CPU ones.

With ``--resume 0`` the run starts from the committed weights at step 0; with
``--resume 1`` it first restores everything from CKPT/checkpoint.pt. It trains until
the step counter reaches S, writes CKPT/checkpoint.pt, then DIR/steps.json,
DIR/end.json, DIR/state.npz and DIR/run.json (embed.py's settings record: device,
determinism, TF32). ``--break`` leaves one piece out of the restore (``python-rng``,
``numpy-rng``, ``torch-rng``, ``device-rng``, ``optimizer``, ``scheduler``, ``loader``)
to show what the check catches; ``device-rng`` restores the CPU generators only, as this
script did before it ran on GPUs, and changes nothing on the CPU (it has no other).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np
import rng
import torch
from embed import (
    HERE,
    TinyEmbedder,
    buckets_of,
    load_weights,
    read_sample,
    set_determinism,
    settings,
)

BATCH = 4
LR = 0.01
SEED = 1234


class Sample(torch.utils.data.Dataset):
    """Item i is the index i; the loop looks up its tokens and target."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> int:
        return i


class Loader:
    """A shuffled DataLoader whose position can be saved: the generator's state at the
    start of the epoch and the batches consumed since (the epoch is replayed, skipped)."""

    def __init__(self, n: int) -> None:
        self.gen = torch.Generator().manual_seed(SEED)
        self.loader = torch.utils.data.DataLoader(Sample(n), batch_size=BATCH, shuffle=True,
                                                  generator=self.gen)
        self.epoch_state = self.gen.get_state()
        self.consumed = 0
        self.it = iter(self.loader)

    def next(self) -> list[int]:
        try:
            batch = next(self.it)
        except StopIteration:
            self.epoch_state, self.consumed = self.gen.get_state(), 0
            self.it = iter(self.loader)
            batch = next(self.it)
        self.consumed += 1
        return batch.tolist()

    def state_dict(self) -> dict:
        return {"epoch_state": self.epoch_state, "consumed": self.consumed}

    def load_state_dict(self, state: dict) -> None:
        self.gen.set_state(state["epoch_state"])
        self.epoch_state, self.consumed = state["epoch_state"], 0
        self.it = iter(self.loader)
        for _ in range(state["consumed"]):
            next(self.it)
            self.consumed += 1


def forward(model: TinyEmbedder, texts: list[str], buckets: int, device: str
            ) -> torch.Tensor:
    """embed.py's model with one python draw (a dropped trigram) and torch dropout (on
    a GPU, drawn from the device's generator)."""
    lists = []
    for text in texts:
        tokens = buckets_of(text, buckets)
        if len(tokens) > 1:
            del tokens[random.randrange(len(tokens))]
        lists.append(tokens)
    offsets = torch.tensor(np.cumsum([0] + [len(t) for t in lists[:-1]]),
                           dtype=torch.int64).to(device)
    flat = torch.tensor([b for t in lists for b in t], dtype=torch.int64).to(device)
    hidden = torch.nn.functional.dropout(model.bag(flat, offsets), p=0.1, training=True)
    return torch.nn.functional.normalize(torch.tanh(model.proj(hidden)), p=2.0, dim=1)


def main() -> None:
    parser = argparse.ArgumentParser(description="Train a few steps; resume exactly.")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--steps", type=int, required=True, help="end at this step")
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--resume", choices=("0", "1"), required=True)
    parser.add_argument("--device", default="cpu",
                        help="torch device to train on: cpu (default), cuda:0, xpu:0, mps")
    parser.add_argument("--break", dest="broken", default="",
                        choices=("", *rng.BREAKS, "optimizer", "scheduler", "loader"))
    args = parser.parse_args()
    set_determinism()
    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    ids, texts = read_sample(HERE / "data" / "sample.jsonl")
    weights = load_weights(HERE / "model" / "weights.npz")
    model = TinyEmbedder(weights).to(args.device)
    model.bag.weight.requires_grad_(True)
    targets = torch.from_numpy(np.random.default_rng(7).standard_normal(
        (len(texts), weights["projection"].shape[1])).astype(np.float32)).to(args.device)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.8)
    loader = Loader(len(texts))
    step = 0
    ckpt = args.checkpoint / "checkpoint.pt"
    if args.resume == "1":
        step = restore(torch.load(ckpt, weights_only=False), model, opt, sched, loader,
                       args.broken, args.device)
    log = []
    while step < args.steps:
        step += 1
        batch = loader.next()
        noise = torch.from_numpy(np.random.normal(0, 0.01, targets[batch].shape)
                                 .astype(np.float32)).to(args.device)
        out = forward(model, [texts[i] for i in batch], weights["embedding"].shape[0],
                      args.device)
        loss = torch.nn.functional.mse_loss(out, targets[batch] + noise)
        lr = opt.param_groups[0]["lr"]
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        log.append({"step": step, "loss": loss.item(), "lr": lr,
                    "batch": [ids[i] for i in batch]})
    args.checkpoint.mkdir(parents=True, exist_ok=True)
    torch.save({"step": step, "model": model.state_dict(), "optimizer": opt.state_dict(),
                "scheduler": sched.state_dict(), "loader": loader.state_dict(),
                "rng": rng.save(args.device)}, ckpt)
    write_outputs(args.out, log, step, model, opt, sched, args.device)
    print(f"trained to step {step} ({len(log)} steps in this process) -> {args.out}")


def restore(state: dict, model: TinyEmbedder, opt: torch.optim.Optimizer,
            sched: torch.optim.lr_scheduler.LRScheduler, loader: Loader, broken: str,
            device: str) -> int:
    model.load_state_dict(state["model"])
    if broken != "optimizer":
        opt.load_state_dict(state["optimizer"])
    if broken != "scheduler":
        sched.load_state_dict(state["scheduler"])
    if broken != "loader":
        loader.load_state_dict(state["loader"])
    rng.restore(state["rng"], device, broken)
    return int(state["step"])


def write_outputs(out: Path, log: list[dict], step: int, model: TinyEmbedder,
                  opt: torch.optim.Optimizer,
                  sched: torch.optim.lr_scheduler.LRScheduler, device: str) -> None:
    """The contract's three files (the RNG draws last, after the checkpoint), and the
    settings of the run."""
    out.mkdir(parents=True, exist_ok=True)
    names = {id(p): name for name, p in model.named_parameters()}
    arrays = {f"model/{k}": v.detach().cpu().numpy() for k, v in model.state_dict().items()}
    for param, slots in opt.state.items():
        for slot, value in slots.items():
            arrays[f"optimizer/{names[id(param)]}/{slot}"] = (
                torch.as_tensor(value).detach().cpu().numpy())
    np.savez(out / "state.npz", **arrays)
    scheduler = {k: v for k, v in sched.state_dict().items()
                 if isinstance(v, (int, float, list)) and not isinstance(v, bool)}
    (out / "steps.json").write_text(json.dumps(log, indent=1) + "\n", encoding="utf-8")
    (out / "end.json").write_text(json.dumps({"step": step, "scheduler": scheduler,
                                              "rng": rng.draws(device)}, indent=1) + "\n",
                                  encoding="utf-8")
    (out / "run.json").write_text(json.dumps(settings(device), indent=1) + "\n",
                                  encoding="utf-8")


if __name__ == "__main__":
    main()
