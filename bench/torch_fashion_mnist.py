#!/usr/bin/python3
"""PyTorch peer baseline: Fashion-MNIST training throughput (samples/s).

Trains the reference MLP or CNN with Adam(1e-3) on the Fashion-MNIST training
set held in memory as a tensor. For each batch size it runs 20 untimed warm-up
steps, then times the remaining full batches of one epoch (or of the fraction
of it given by --epochs-fraction) and reports timed samples / elapsed seconds.

--autocast bf16 runs forward and loss under torch.autocast("cpu", dtype=torch.bfloat16), PyTorch's
CPU mixed-precision recipe: matrix products and convolutions in bfloat16, master weights, their
gradients and Adam in float32 (no gradient scaler: bfloat16 has float32's exponent range).

Run with the Debian system interpreter (/usr/bin/python3), which provides
torch 1.13. For PyTorch's fastest configuration on a 2-core machine, see
bench/run_benchmark.sh.
"""

import argparse
import gzip
import json
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DEFAULT_DATA_DIR = "/usr/share/datasets/fashion-mnist"
EPOCH_ROWS = 60000
WARMUP_STEPS = 20


def read_idx_images(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    magic, n, rows, cols = struct.unpack(">IIII", raw[:16])
    if magic != 0x00000803:
        raise ValueError(f"{path}: bad image magic 0x{magic:08x}")
    pixels = np.frombuffer(raw, dtype=np.uint8, count=n * rows * cols, offset=16)
    return pixels.reshape(n, 1, rows, cols).astype(np.float32) / np.float32(255.0)


def read_idx_labels(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    magic, n = struct.unpack(">II", raw[:8])
    if magic != 0x00000801:
        raise ValueError(f"{path}: bad label magic 0x{magic:08x}")
    return np.frombuffer(raw, dtype=np.uint8, count=n, offset=8).astype(np.int64)


def build_model(name):
    if name == "mlp":
        return nn.Sequential(
            nn.Flatten(),
            nn.Linear(784, 256),
            nn.ReLU(),
            nn.Linear(256, 256),
            nn.ReLU(),
            nn.Linear(256, 10),
        )
    if name == "cnn":
        return nn.Sequential(
            nn.Conv2d(1, 32, 3),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(1600, 128),
            nn.ReLU(),
            nn.Linear(128, 10),
        )
    raise ValueError(f"unknown model {name!r}")


def status_kb(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def measure(model_name, batch, images, labels, epochs_fraction, device, autocast=False):
    """Returns (timed_samples, seconds, peak resident-set growth in MB) for one batch size.

    The growth counts from just before the model is built (the peak is reset there through
    /proc/self/clear_refs, so loading the data does not count). It is exact for the first batch
    size of a process; later ones reuse memory the earlier freed and may show less.
    """
    rss_before = status_kb("VmRSS")
    try:
        open("/proc/self/clear_refs", "w").write("5")
    except OSError:
        pass
    torch.manual_seed(0)
    model = build_model(model_name).to(device)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    n = images.shape[0]
    full_batches = n // batch  # the last partial batch is dropped
    if full_batches <= WARMUP_STEPS:
        raise ValueError(
            f"batch {batch}: only {full_batches} full batches, need more than "
            f"{WARMUP_STEPS} warm-up steps")
    timed_steps = int((full_batches - WARMUP_STEPS) * epochs_fraction)
    timed_steps = max(1, min(timed_steps, full_batches - WARMUP_STEPS))

    perm = torch.randperm(n).to(device)

    def step(i):
        idx = perm[i * batch:(i + 1) * batch]
        x = images[idx]
        y = labels[idx]
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.split(":")[0], dtype=torch.bfloat16, enabled=autocast):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    for i in range(WARMUP_STEPS):
        step(i)

    t0 = time.perf_counter()
    for i in range(WARMUP_STEPS, WARMUP_STEPS + timed_steps):
        loss = step(i)
    loss.item()  # make sure the last step has finished (on a GPU too)
    elapsed = time.perf_counter() - t0
    return timed_steps * batch, elapsed, (status_kb("VmHWM") - rss_before) / 1024


def parse_batch_sizes(text):
    sizes = [int(s) for s in text.split(",") if s.strip()]
    if not sizes or any(b <= 0 for b in sizes):
        raise argparse.ArgumentTypeError(f"bad batch sizes {text!r}")
    return sizes


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    p.add_argument("--batch-sizes", type=parse_batch_sizes, default=[32, 128, 512],
                   help="comma-separated list, e.g. 32,128,512")
    p.add_argument("--threads", type=int, default=1,
                   help="passed to torch.set_num_threads")
    p.add_argument("--epochs-fraction", type=float, default=1.0,
                   help="fraction of the 60000-row epoch to time (0 < F <= 1)")
    p.add_argument("--device", default="cpu",
                   help="cpu, or cuda for a GPU (the data then lives on the GPU)")
    p.add_argument("--autocast", choices=["none", "bf16"], default="none",
                   help="bf16: forward and loss under torch.autocast with bfloat16")
    p.add_argument("--data-dir", default=DEFAULT_DATA_DIR)
    p.add_argument("--json", action="store_true",
                   help="print one JSON line per batch size")
    args = p.parse_args(argv)

    if not (0.0 < args.epochs_fraction <= 1.0):
        p.error("--epochs-fraction must be in (0, 1]")
    if args.threads < 1:
        p.error("--threads must be >= 1")

    torch.set_num_threads(args.threads)

    images = torch.from_numpy(read_idx_images(
        os.path.join(args.data_dir, "train-images-idx3-ubyte.gz")))
    labels = torch.from_numpy(read_idx_labels(
        os.path.join(args.data_dir, "train-labels-idx1-ubyte.gz")))
    images = images[:EPOCH_ROWS].to(args.device)
    labels = labels[:EPOCH_ROWS].to(args.device)

    for batch in args.batch_sizes:
        samples, seconds, growth_mb = measure(args.model, batch, images, labels,
                                   args.epochs_fraction, args.device, args.autocast == "bf16")
        rate = samples / seconds
        # Only with --autocast bf16: the output without it is as before the option existed.
        autocast = {"autocast": args.autocast} if args.autocast != "none" else {}
        if args.json:
            print(json.dumps({
                "peer": "pytorch",
                "model": args.model,
                "device": args.device,
                "batch": batch,
                "threads": args.threads,
                "samples_per_s": round(rate, 1),
                "peak_rss_growth_mb": round(growth_mb, 2),
                **autocast,
            }))
        else:
            print(f"pytorch {args.model} {args.device} batch={batch:<4d} threads={args.threads} "
                  f"{''.join(f'autocast={v} ' for v in autocast.values())}"
                  f"{rate:10.0f} samples/s  ({samples} samples in {seconds:.3f} s)")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
