"""Generate reference values for Tandem's Embedding and MultiHeadAttention tests.

What it makes
-------------
``tests/data/attention_refs.json`` with, per case, the inputs, the weights in Keras 3's layout,
a fixed random weighting W of the output, the output, and the gradients of L = sum(output * W)
with respect to every input and every weight.  Everything is computed in float64 with PyTorch and
stored flat in row-major order, each tensor as {"shape": [...], "data": [...]}.

* ``embedding``: ids (3, 5) with repeated ids and both ends of the range, table (7, 4).  Forward
  and gradient come from torch.nn.functional.embedding.
* ``mha_*``: Keras 3 MultiHeadAttention.  Weights are stored as Keras keeps them:
      query/kernel (dq, N, H), query/bias (N, H), key/kernel (dk, N, H), key/bias (N, H),
      value/kernel (dv, N, Hv), value/bias (N, Hv),
      attention_output/kernel (N, Hv, *out), attention_output/bias (*out)
  (no biases when use_bias is False).  The reference forward is Keras's computation written with
  plain torch ops on that layout: per-head projections by einsum, the projected query scaled by
  1/sqrt(H), scores = q.k per head, the causal mask of Keras's use_causal_mask (query i sees keys
  j <= i, added as -1e9 like Keras's masked softmax), softmax over keys, the weighted sum of
  values, and the output projection over (heads, value_dim).
  Where PyTorch's own attention can express the same layer (N*H == dq, Hv == H, output dim ==
  dq), the script also fills torch.nn.functional.multi_head_attention_forward's separate
  projection weights from the Keras kernels (kernel.reshape(d, N*H).T; the output projection
  kernel.reshape(N*H, dq).T) and asserts that it gives the same output, so the reference does not
  rest on this script's reading of the layout alone.

How to run
----------
From the repository root, with a Python that has torch and numpy:

    /usr/bin/python3 tests/data/make_attention_refs.py
"""

import json
import math
import os

import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
SEED = 20240905


def tensor_json(t):
    t = t.detach().contiguous()
    return {"shape": list(t.shape), "data": [float(v) for v in t.reshape(-1).tolist()]}


def uniform(gen, shape, lo, hi):
    return torch.rand(shape, generator=gen) * (hi - lo) + lo


def embedding_case(gen):
    vocab, dim = 7, 4
    ids = torch.tensor([[0, 3, 6, 3, 1], [2, 2, 6, 0, 5], [4, 3, 3, 1, 6]], dtype=torch.int64)
    table = uniform(gen, (vocab, dim), -1, 1).requires_grad_()
    out = F.embedding(ids, table)
    w = uniform(gen, out.shape, -1, 1)
    (out * w).sum().backward()
    return {
        "input_dim": vocab, "output_dim": dim,
        "ids": {"shape": list(ids.shape), "data": ids.reshape(-1).tolist()},
        "embeddings": tensor_json(table), "w": tensor_json(w),
        "output": tensor_json(out), "d_embeddings": tensor_json(table.grad),
    }


def keras_mha(query, value, key, wts, heads, key_dim, causal, out_shape):
    """Keras 3 MultiHeadAttention.call on the Keras weight layout, with plain torch ops."""
    def proj(x, name):
        y = torch.einsum("bld,dnh->blnh", x, wts[name + "/kernel"])
        return y + wts[name + "/bias"] if name + "/bias" in wts else y
    q = proj(query, "query") * (1.0 / math.sqrt(key_dim))
    k = proj(key, "key")
    v = proj(value, "value")
    scores = torch.einsum("bsnh,btnh->bnts", k, q)
    if causal:
        t, s = scores.shape[-2], scores.shape[-1]
        allowed = torch.arange(s)[None, :] <= torch.arange(t)[:, None]
        scores = scores + (~allowed).to(scores.dtype) * -1e9
    probs = torch.softmax(scores, dim=-1)
    o = torch.einsum("bnts,bsnh->btnh", probs, v)
    b, t = o.shape[0], o.shape[1]
    kernel = wts["attention_output/kernel"].reshape(heads * o.shape[-1], -1)
    y = o.reshape(b, t, -1) @ kernel
    if "attention_output/bias" in wts:
        y = y + wts["attention_output/bias"].reshape(-1)
    return y.reshape((b, t) + tuple(out_shape))


def torch_mha(query, value, key, wts, heads, key_dim, causal):
    """The same layer through torch's own multi-head attention (needs N*H == dq, Hv == H)."""
    dq = query.shape[-1]
    e = heads * key_dim
    assert e == dq and wts["value/kernel"].shape[-1] == key_dim
    def w(name):
        return wts[name + "/kernel"].reshape(-1, e).t()
    bias = torch.cat([wts[n + "/bias"].reshape(-1) for n in ("query", "key", "value")])
    mask = None
    if causal:
        t, s = query.shape[1], value.shape[1]
        mask = torch.arange(s)[None, :] > torch.arange(t)[:, None]  # True = may not attend
    out, _ = F.multi_head_attention_forward(
        query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1), e, heads,
        None, bias, None, None, False, 0.0,
        wts["attention_output/kernel"].reshape(e, -1).t(), wts["attention_output/bias"],
        training=False, need_weights=False, attn_mask=mask, use_separate_proj_weight=True,
        q_proj_weight=w("query"), k_proj_weight=w("key"), v_proj_weight=w("value"))
    return out.transpose(0, 1)


def mha_case(gen, name, batch, t, s, dq, dv, dk, heads, key_dim, value_dim=None, causal=False,
             use_bias=True, out_shape=None, separate_key=True):
    value_dim = value_dim or key_dim
    out_shape = tuple(out_shape) if out_shape else (dq,)
    query = uniform(gen, (batch, t, dq), -1, 1).requires_grad_()
    value = uniform(gen, (batch, s, dv), -1, 1).requires_grad_()
    key = uniform(gen, (batch, s, dk), -1, 1).requires_grad_() if separate_key else value
    shapes = [("query/kernel", (dq, heads, key_dim)), ("query/bias", (heads, key_dim)),
              ("key/kernel", (dk, heads, key_dim)), ("key/bias", (heads, key_dim)),
              ("value/kernel", (dv, heads, value_dim)), ("value/bias", (heads, value_dim)),
              ("attention_output/kernel", (heads, value_dim) + out_shape),
              ("attention_output/bias", out_shape)]
    if not use_bias:
        shapes = [p for p in shapes if p[0].endswith("kernel")]
    wts = {n: uniform(gen, sh, -0.6, 0.6).requires_grad_() for n, sh in shapes}
    out = keras_mha(query, value, key, wts, heads, key_dim, causal, out_shape)
    if use_bias and heads * key_dim == dq and value_dim == key_dim and out_shape == (dq,):
        other = torch_mha(query, value, key, wts, heads, key_dim, causal)
        err = (other - out).abs().max().item()
        assert err < 1e-12, f"{name}: torch's multi_head_attention_forward differs by {err}"
        print(f"{name}: torch multi_head_attention_forward agrees (max diff {err:.1e})")
    w = uniform(gen, out.shape, -1, 1)
    (out * w).sum().backward()
    case = {
        "num_heads": heads, "key_dim": key_dim, "value_dim": value_dim, "use_causal_mask": causal,
        "use_bias": use_bias, "output_shape": list(out_shape), "separate_key": separate_key,
        "query": tensor_json(query), "value": tensor_json(value),
        "weight_names": [n for n, _ in shapes],
        "weights": [tensor_json(wts[n]) for n, _ in shapes],
        "w": tensor_json(w), "output": tensor_json(out),
        "d_query": tensor_json(query.grad), "d_value": tensor_json(value.grad),
        "d_weights": [tensor_json(wts[n].grad) for n, _ in shapes],
    }
    if separate_key:
        case["key"] = tensor_json(key)
        case["d_key"] = tensor_json(key.grad)
    return case


def main():
    gen = torch.Generator().manual_seed(SEED)
    refs = {
        "embedding": embedding_case(gen),
        # Cross-attention with a distinct key of its own width.
        "mha_cross": mha_case(gen, "mha_cross", 2, 4, 5, dq=6, dv=4, dk=5, heads=2, key_dim=3),
        # Causal attention over equal lengths, key = value.
        "mha_causal": mha_case(gen, "mha_causal", 2, 4, 4, dq=6, dv=6, dk=6, heads=3, key_dim=2,
                               causal=True, separate_key=False),
        # Causal with fewer queries than keys: Keras aligns the mask at the first position.
        "mha_causal_cross": mha_case(gen, "mha_causal_cross", 2, 3, 5, dq=4, dv=3, dk=2, heads=2,
                                     key_dim=2, causal=True),
        # value_dim != key_dim, a rank-2 output_shape, no biases.
        "mha_value_dim": mha_case(gen, "mha_value_dim", 2, 3, 4, dq=5, dv=3, dk=3, heads=2, key_dim=2,
                                  value_dim=4, use_bias=False, out_shape=(2, 3), separate_key=False),
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "attention_refs.json")
    with open(path, "w") as f:
        json.dump(refs, f, separators=(",", ":"))
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
