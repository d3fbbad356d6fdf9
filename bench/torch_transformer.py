#!/usr/bin/python3
"""PyTorch peer of bench/bench_transformer.cpp: Transformer training throughput and memory.

The model of examples/text_transformer.cpp: token embedding plus a learned position embedding,
pre-norm decoder blocks (layer norm, causal 4-head self-attention with d = 128, residual; layer
norm, Linear(512) + exact GELU + Linear(128), residual), a final layer norm and the vocabulary
head; Adam(1e-3), cross-entropy on logits, random tokens of a 96-symbol vocabulary. 10 untimed
warm-up steps, then --steps timed ones.

Memory: the growth of the resident set from just before the model is built to its peak over
training (the peak is reset first through /proc/self/clear_refs, so the data's set-up does not
count), the counterpart of Tandem's planned arena plus its weights and optimizer slots.

--autocast bf16 runs forward and loss under torch.autocast("cpu", dtype=torch.bfloat16) (the
weights, their gradients and Adam stay float32), the peer of bench_transformer --policy mixed_bfloat16.
"""

import argparse
import json

import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_token_bench import timed_training

VOCAB, SEQ, DIM, HEADS, HIDDEN = 96, 64, 128, 4, 512
WARMUP = 10


def status_kb(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        # Keras's LayerNormalization epsilon, so both normalise alike.
        self.ln1 = nn.LayerNorm(DIM, eps=1e-3)
        self.attn = nn.MultiheadAttention(DIM, HEADS, batch_first=True)
        self.ln2 = nn.LayerNorm(DIM, eps=1e-3)
        self.up = nn.Linear(DIM, HIDDEN)
        self.down = nn.Linear(HIDDEN, DIM)

    def forward(self, x, mask):
        h = self.ln1(x)
        a, _ = self.attn(h, h, h, attn_mask=mask, need_weights=False)
        x = x + a
        return x + self.down(F.gelu(self.up(self.ln2(x))))


class Model(nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Parameter(torch.zeros(SEQ, DIM))
        self.blocks = nn.ModuleList(Block() for _ in range(blocks))
        self.ln = nn.LayerNorm(DIM, eps=1e-3)
        self.head = nn.Linear(DIM, VOCAB)
        self.register_buffer("mask", torch.triu(torch.full((SEQ, SEQ), float("-inf")), diagonal=1))

    def forward(self, tokens):
        x = self.emb(tokens) + self.pos
        for b in self.blocks:
            x = b(x, self.mask)
        return self.head(self.ln(x))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--blocks", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--autocast", choices=["none", "bf16"], default="none")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    rss_before = status_kb("VmRSS")
    open("/proc/self/clear_refs", "w").write("5")  # the peak restarts here
    seconds = timed_training(Model(args.blocks), VOCAB, SEQ, args.batch, args.steps, WARMUP,
                             autocast=args.autocast == "bf16")
    growth_mb = (status_kb("VmHWM") - rss_before) / 1024
    rate = args.steps * args.batch / seconds
    # Only with --autocast bf16: the output without it is as before the option existed.
    autocast = {"autocast": args.autocast} if args.autocast != "none" else {}
    if args.json:
        print(json.dumps({"peer": "pytorch", "model": "transformer", "blocks": args.blocks, "batch": args.batch,
                          "threads": args.threads, "samples_per_s": round(rate, 1),
                          "step_ms": round(1e3 * seconds / args.steps, 2), "peak_rss_growth_mb": round(growth_mb, 2),
                          **autocast}))
    else:
        print(f"pytorch transformer blocks={args.blocks} batch={args.batch} threads={args.threads} "
              f"{''.join(f'autocast={v} ' for v in autocast.values())}{rate:.0f} samples/s, "
              f"{1e3 * seconds / args.steps:.1f} ms per step, peak RSS growth {growth_mb:.1f} MB")


if __name__ == "__main__":
    main()
