#!/usr/bin/python3
"""PyTorch peer of bench/bench_lstm.cpp: LSTM training throughput.

A character-level language model: Embedding(96, 64), LSTM(256) over every step (nn.LSTM,
batch_first, which returns the whole sequence as Keras's return_sequences=True does), Linear(96)
on each step; Adam(1e-3), cross-entropy on logits, random tokens of a 96-symbol vocabulary in
windows of 64. 10 untimed warm-up steps, then --steps timed ones. (nn.LSTM has two bias vectors
where Keras's has one: 1,024 more parameters of 380,000, which does not change the speed.)
"""

import argparse
import json

import torch
import torch.nn as nn

from torch_token_bench import timed_training

VOCAB, SEQ, EMBEDDING = 96, 64, 64
WARMUP = 10


class Model(nn.Module):
    def __init__(self, units):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, EMBEDDING)
        self.lstm = nn.LSTM(EMBEDDING, units, batch_first=True)
        self.head = nn.Linear(units, VOCAB)

    def forward(self, tokens):
        h, _ = self.lstm(self.emb(tokens))
        return self.head(h)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--units", type=int, default=256)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    seconds = timed_training(Model(args.units), VOCAB, SEQ, args.batch, args.steps, WARMUP)
    rate = args.steps * args.batch / seconds
    if args.json:
        print(json.dumps({"peer": "pytorch", "model": "lstm", "units": args.units, "batch": args.batch,
                          "threads": args.threads, "samples_per_s": round(rate, 1),
                          "step_ms": round(1e3 * seconds / args.steps, 2)}))
    else:
        print(f"pytorch lstm units={args.units} batch={args.batch} threads={args.threads} {rate:.0f} samples/s, "
              f"{1e3 * seconds / args.steps:.1f} ms per step")


if __name__ == "__main__":
    main()
