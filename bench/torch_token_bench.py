"""What the PyTorch token-model benchmarks (torch_lstm.py, torch_transformer.py) share: random
token windows and the timed training loop, as bench/token_bench.h does for Tandem's side."""

import time

import torch
import torch.nn.functional as F


def timed_training(model, vocab, seq, batch, steps, warmup, autocast=False):
    """Adam(1e-3) on sparse cross-entropy over every position, `warmup` untimed steps then `steps`
    timed ones on random tokens; returns the timed seconds. `autocast`: forward and loss under
    torch.autocast("cpu", dtype=torch.bfloat16) (PyTorch's CPU mixed-precision recipe; the
    weights, their gradients and Adam stay float32)."""
    g = torch.Generator().manual_seed(1)
    total = warmup + steps
    x = torch.randint(0, vocab, (total, batch, seq), generator=g)
    y = torch.randint(0, vocab, (total, batch, seq), generator=g)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step(i):
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = F.cross_entropy(model(x[i]).reshape(-1, vocab), y[i].reshape(-1))
        loss.backward()
        opt.step()
        return loss

    for i in range(warmup):
        step(i)
    t0 = time.perf_counter()
    for i in range(warmup, total):
        loss = step(i)
    loss.item()
    return time.perf_counter() - t0
