"""Generate optimizer reference values for Tandem's optimizer tests.

What it makes
-------------
``tests/data/optimizer_refs.json``: a tiny MLP

    logits = relu(x @ kernel1 + bias1) @ kernel2 + bias2
    kernel1 [4,5], bias1 [5], kernel2 [5,3], bias2 [3]  (Keras (in, out) layout)

trained for 3 full-batch steps on fixed data (x [8,4], integer labels y [8])
with mean sparse softmax cross-entropy, once per optimizer configuration.
For every case the file holds the 3 losses (each measured *before* that
step's update) and the four weight tensors after the third update.  All
tensors are stored flat in row-major order.  Everything is computed in
float64.  Where PyTorch has the optimizer, the case is configured so that
PyTorch performs exactly the Keras 3 update rule, its numbers are stored, and
the script re-derives the case with a plain numpy implementation of the Keras
3 formulas and asserts agreement to 1e-12.  Where it has not (see "Cases
without a PyTorch twin"), the numpy implementation's numbers are stored.

How to run
----------
From the repository root, with a Python that has torch and numpy:

    /usr/bin/python3 tests/data/make_optimizer_refs.py

Other builds of torch and numpy (or other CPUs) change the last bits of the
results, about 3e-15 relative: the stored values of the first seven cases
were kept when the adagrad, nadam and lion cases were added.

Epsilon notes
-------------
* SGD (plain, momentum, Nesterov) has no epsilon; torch.optim.SGD with
  dampening=0 matches Keras for a constant learning rate (see ``CASES``).
* Adam / AdamW: Keras adds epsilon to sqrt(v) *before* bias correction,
      w -= lr*sqrt(1-b2^t)/(1-b1^t) * m / (sqrt(v) + eps)
  while PyTorch adds it *after* the bias correction of v,
      w -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps_t).
  Multiplying the torch denominator by sqrt(1-b2^t) shows both are identical
  when eps_t = eps / sqrt(1-b2^t).  So before step t we set the torch
  param_group's 'eps' to that value.  The JSON stores the Keras epsilon (1e-7).
* RMSprop: Keras 3 (keras/src/optimizers/rmsprop.py, non-centered) uses
      v = rho*v + (1-rho)*g^2;  inc = lr*g / sqrt(v + eps)
  i.e. epsilon *inside* the square root, whereas torch.optim.RMSprop uses
  g / (sqrt(v) + eps).  No choice of torch eps reproduces the Keras formula
  exactly, so the RMSprop cases use an epsilon small enough to be negligible:
  the Keras side (what the JSON records, and what a test must configure) uses
  RMSPROP_EPS = 1e-24 and torch uses eps = 0.  The relative effect of the Keras
  epsilon on the denominator is about eps/(2v); the script asserts that every
  gradient entry is nonzero and that min(v) is large enough for this to stay
  below 1e-13 (no dead hidden unit, so torch's eps = 0 never divides 0 by 0).
  1e-24 is a normal float32 number, so a float32 implementation can use it too.
* Adagrad: Keras 3 (keras/src/optimizers/adagrad.py) starts the accumulator
  at initial_accumulator_value and steps
      acc += g^2;  w -= lr*g / sqrt(acc + eps)
  (epsilon inside the root), torch.optim.Adagrad (lr_decay = 0) steps
      sum += g^2;  w -= lr*g / (sqrt(sum) + eps_t).
  With eps_t = 0 and torch's initial_accumulator_value = Keras's
  initial_accumulator_value + eps, torch's sum is Keras's acc + eps at every
  step, so the two are identical.  The JSON stores Keras's values (0.1, 1e-7).

Cases without a PyTorch twin
----------------------------
Their reference is the plain-numpy Keras 3 implementation below, in float64
(the JSON marks them "reference": "numpy"):
* Nadam: torch 1.13's NAdam, with momentum_decay = 1 so that its momentum
  schedule mu_t = beta_1*(1 - 0.5*0.96^t) is Keras's, would be Keras 3's rule
  (keras/src/optimizers/nadam.py) but for one factor: torch 1.13 takes the
  product for the momentum term as prod(mu_1..mu_t) * mu_t * mu_{t+1}, Keras
  (and torch 2) as prod(mu_1..mu_t) * mu_{t+1}.  No torch setting undoes it.
  Keras keeps prod(mu_1..mu_t) in an optimizer variable, u_product.
* Lion: torch 1.13 has none.  Keras 3 (keras/src/optimizers/lion.py) steps
      w -= lr*sign(beta_1*m + (1-beta_1)*g);  m = beta_2*m + (1-beta_2)*g.
  A float32 implementation agrees only if no sign argument is near zero: the
  script asserts that every one is at least LION_MIN_SIGN_ARG in magnitude.
"""

import json
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)

SEED = 20240611
N, D_IN, D_HID, D_OUT = 8, 4, 5, 3
STEPS = 3
RMSPROP_EPS = 1e-24
LION_MIN_SIGN_ARG = 1e-5
PARAM_NAMES = ("kernel1", "bias1", "kernel2", "bias2")

OUT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "optimizer_refs.json")


# --------------------------------------------------------------------------
# Data and initial weights
# --------------------------------------------------------------------------
def make_problem():
    rng = np.random.default_rng(SEED)
    x = rng.normal(size=(N, D_IN))
    y = rng.integers(0, D_OUT, size=N)
    init = {
        "kernel1": rng.uniform(-0.7, 0.7, size=(D_IN, D_HID)),
        "bias1": rng.uniform(-0.1, 0.1, size=(D_HID,)),
        "kernel2": rng.uniform(-0.7, 0.7, size=(D_HID, D_OUT)),
        "bias2": rng.uniform(-0.1, 0.1, size=(D_OUT,)),
    }
    pre = x @ init["kernel1"] + init["bias1"]
    active = pre > 0
    # Healthy network: most rows have at least one active unit, and every
    # hidden unit is active on at least one row (no all-zero gradient columns).
    assert active.any(axis=1).sum() >= N - 1, "too many dead rows"
    assert active.any(axis=0).all(), "a hidden unit is dead for every row"
    assert len(set(y.tolist())) == D_OUT, "every class should appear"
    return x, y, init


# --------------------------------------------------------------------------
# Optimizer cases.  Keras hyper-parameters are what the JSON records.
# --------------------------------------------------------------------------
CASES = [
    # Keras SGD, no momentum: w -= lr*g.  Same as torch SGD.
    {"name": "sgd", "optimizer": "sgd", "learning_rate": 0.1,
     "momentum": 0.0, "nesterov": False},
    # Keras: v = m*v - lr*g; w += v.  torch: b = m*b + g; w -= lr*b.
    # With constant lr, v == -lr*b at every step, so both are identical.
    {"name": "sgd_momentum", "optimizer": "sgd", "learning_rate": 0.1,
     "momentum": 0.9, "nesterov": False},
    # Keras: v = m*v - lr*g; w += m*v - lr*g.
    # torch: b = m*b + g; w -= lr*(g + m*b).  Again v == -lr*b.
    {"name": "sgd_nesterov", "optimizer": "sgd", "learning_rate": 0.1,
     "momentum": 0.9, "nesterov": True},
    {"name": "adam", "optimizer": "adam", "learning_rate": 0.01,
     "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7},
    # Keras AdamW: w -= w*wd*lr (every variable, biases included, since no
    # exclusion is configured), then the Adam update.  torch AdamW multiplies
    # by (1 - lr*wd) first as well, for all parameters in the group.
    {"name": "adamw", "optimizer": "adamw", "learning_rate": 0.01,
     "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7, "weight_decay": 0.004},
    {"name": "rmsprop", "optimizer": "rmsprop", "learning_rate": 0.01,
     "rho": 0.9, "momentum": 0.0, "epsilon": RMSPROP_EPS},
    # Keras: mom = m*mom + lr*g/sqrt(v+eps); w -= mom.
    # torch: buf = m*buf + g/(sqrt(v)+eps); w -= lr*buf.  With constant lr,
    # mom == lr*buf (up to the epsilon placement discussed above).
    {"name": "rmsprop_momentum", "optimizer": "rmsprop", "learning_rate": 0.01,
     "rho": 0.9, "momentum": 0.9, "epsilon": RMSPROP_EPS},
    {"name": "adagrad", "optimizer": "adagrad", "learning_rate": 0.1,
     "initial_accumulator_value": 0.1, "epsilon": 1e-7},
    # Keras's defaults but for the learning rate, as for the other cases.
    {"name": "nadam", "optimizer": "nadam", "learning_rate": 0.01,
     "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7, "reference": "numpy"},
    {"name": "lion", "optimizer": "lion", "learning_rate": 0.01,
     "beta_1": 0.9, "beta_2": 0.99, "reference": "numpy"},
]


# --------------------------------------------------------------------------
# PyTorch run
# --------------------------------------------------------------------------
def torch_forward(params, x, y):
    hidden = torch.relu(x @ params["kernel1"] + params["bias1"])
    logits = hidden @ params["kernel2"] + params["bias2"]
    return F.cross_entropy(logits, y)


def make_torch_optimizer(case, plist):
    kind = case["optimizer"]
    lr = case["learning_rate"]
    if kind == "sgd":
        return torch.optim.SGD(plist, lr=lr, momentum=case["momentum"],
                               dampening=0.0, nesterov=case["nesterov"])
    if kind == "adam":
        return torch.optim.Adam(plist, lr=lr,
                                betas=(case["beta_1"], case["beta_2"]),
                                eps=case["epsilon"], weight_decay=0.0)
    if kind == "adamw":
        return torch.optim.AdamW(plist, lr=lr,
                                 betas=(case["beta_1"], case["beta_2"]),
                                 eps=case["epsilon"],
                                 weight_decay=case["weight_decay"])
    if kind == "rmsprop":
        # eps = 0 on the torch side; see the module docstring.
        return torch.optim.RMSprop(plist, lr=lr, alpha=case["rho"], eps=0.0,
                                   momentum=case["momentum"], centered=False)
    if kind == "adagrad":
        # Keras's epsilon moves into the starting sum; see the module docstring.
        return torch.optim.Adagrad(
            plist, lr=lr, lr_decay=0.0, eps=0.0,
            initial_accumulator_value=(case["initial_accumulator_value"] +
                                       case["epsilon"]))
    raise ValueError(kind)


def run_torch(case, x_np, y_np, init):
    x = torch.tensor(x_np)
    y = torch.tensor(y_np, dtype=torch.long)
    params = {k: torch.tensor(init[k]).requires_grad_(True)
              for k in PARAM_NAMES}
    plist = [params[k] for k in PARAM_NAMES]
    opt = make_torch_optimizer(case, plist)
    losses = []
    for step in range(STEPS):
        t = step + 1
        if case["optimizer"] in ("adam", "adamw"):
            # Keras adds eps to sqrt(v); torch adds it to sqrt(v)/sqrt(1-b2^t).
            # Dividing Keras's eps by sqrt(1-b2^t) makes the two identical.
            opt.param_groups[0]["eps"] = (
                case["epsilon"] / math.sqrt(1.0 - case["beta_2"] ** t))
        opt.zero_grad()
        loss = torch_forward(params, x, y)
        losses.append(loss.item())
        loss.backward()
        opt.step()
    final = {k: params[k].detach().numpy().copy() for k in PARAM_NAMES}
    return losses, final


# --------------------------------------------------------------------------
# Independent numpy implementation of the Keras 3 update rules (self-check)
# --------------------------------------------------------------------------
def np_loss_and_grads(w, x, y):
    pre = x @ w["kernel1"] + w["bias1"]
    h = np.maximum(pre, 0.0)
    logits = h @ w["kernel2"] + w["bias2"]
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    loss = -logp[np.arange(N), y].mean()
    dlogits = np.exp(logp)
    dlogits[np.arange(N), y] -= 1.0
    dlogits /= N
    dh = dlogits @ w["kernel2"].T
    dpre = dh * (pre > 0)
    grads = {
        "kernel1": x.T @ dpre,
        "bias1": dpre.sum(axis=0),
        "kernel2": h.T @ dlogits,
        "bias2": dlogits.sum(axis=0),
    }
    return loss, grads


def run_numpy_keras(case, x, y, init):
    w = {k: init[k].copy() for k in PARAM_NAMES}
    s1 = {k: np.zeros_like(w[k]) for k in PARAM_NAMES}  # momentum / m
    s2 = {k: np.zeros_like(w[k]) for k in PARAM_NAMES}  # velocity / v
    kind = case["optimizer"]
    lr = case["learning_rate"]
    if kind == "adagrad":
        s1 = {k: np.full_like(w[k], case["initial_accumulator_value"])
              for k in PARAM_NAMES}  # accumulator
    u_product = 1.0  # Nadam: the product of every mu so far
    losses = []
    min_v = math.inf
    min_abs_g = math.inf
    min_sign_arg = math.inf
    for step in range(STEPS):
        loss, grads = np_loss_and_grads(w, x, y)
        losses.append(loss)
        if kind == "nadam":
            t = step + 1
            mu = case["beta_1"] * (1.0 - 0.5 * 0.96 ** t)
            mu_next = case["beta_1"] * (1.0 - 0.5 * 0.96 ** (t + 1))
            u_product *= mu  # Keras updates it once, before every variable
        for k in PARAM_NAMES:
            g = grads[k]
            min_abs_g = min(min_abs_g, np.abs(g).min())
            if kind == "sgd":
                mom = case["momentum"]
                if mom == 0.0:
                    w[k] -= lr * g
                else:
                    s1[k] = mom * s1[k] - lr * g
                    if case["nesterov"]:
                        w[k] += mom * s1[k] - lr * g
                    else:
                        w[k] += s1[k]
            elif kind in ("adam", "adamw"):
                b1, b2, eps = case["beta_1"], case["beta_2"], case["epsilon"]
                if kind == "adamw":
                    w[k] -= w[k] * case["weight_decay"] * lr
                t = step + 1
                alpha = lr * math.sqrt(1.0 - b2 ** t) / (1.0 - b1 ** t)
                s1[k] += (g - s1[k]) * (1.0 - b1)
                s2[k] += (g * g - s2[k]) * (1.0 - b2)
                w[k] -= alpha * s1[k] / (np.sqrt(s2[k]) + eps)
            elif kind == "rmsprop":
                rho, eps, mom = case["rho"], case["epsilon"], case["momentum"]
                s2[k] = rho * s2[k] + (1.0 - rho) * g * g
                min_v = min(min_v, s2[k].min())
                inc = lr * g / np.sqrt(s2[k] + eps)
                if mom > 0.0:
                    s1[k] = mom * s1[k] + inc
                    w[k] -= s1[k]
                else:
                    w[k] -= inc
            elif kind == "adagrad":
                s1[k] += g * g
                w[k] -= lr * g / np.sqrt(s1[k] + case["epsilon"])
            elif kind == "nadam":
                b1, b2, eps = case["beta_1"], case["beta_2"], case["epsilon"]
                s1[k] += (g - s1[k]) * (1.0 - b1)
                s2[k] += (g * g - s2[k]) * (1.0 - b2)
                m_hat = (mu_next * s1[k] / (1.0 - u_product * mu_next) +
                         (1.0 - mu) * g / (1.0 - u_product))
                v_hat = s2[k] / (1.0 - b2 ** t)
                w[k] -= lr * m_hat / (np.sqrt(v_hat) + eps)
            elif kind == "lion":
                b1, b2 = case["beta_1"], case["beta_2"]
                c = b1 * s1[k] + (1.0 - b1) * g
                min_sign_arg = min(min_sign_arg, np.abs(c).min())
                w[k] -= lr * np.sign(c)
                s1[k] = b2 * s1[k] + (1.0 - b2) * g
            else:
                raise ValueError(kind)
    return losses, w, min_v, min_abs_g, min_sign_arg


def flat(a):
    return [float(v) for v in np.asarray(a).reshape(-1)]


def main():
    x, y, init = make_problem()
    out = {
        "x": [[float(v) for v in row] for row in x],
        "y": [int(v) for v in y],
        "init": {k: flat(init[k]) for k in PARAM_NAMES},
        "cases": [],
    }
    for case in CASES:
        n_losses, n_final, min_v, min_abs_g, min_sign_arg = run_numpy_keras(
            case, x, y, init)
        if case.get("reference") == "numpy":
            # No torch twin (see the module docstring): numpy is the reference.
            t_losses, t_final = n_losses, n_final
        else:
            t_losses, t_final = run_torch(case, x, y, init)
        if case["optimizer"] == "lion":
            assert min_sign_arg >= LION_MIN_SIGN_ARG, min_sign_arg

        if case["optimizer"] == "rmsprop":
            # Every gradient entry nonzero (torch eps = 0 is safe), and the
            # Keras epsilon perturbs sqrt(v + eps) by a relative eps/(2v)
            # that is far below the 1e-12 check below.
            assert min_abs_g > 0.0, "zero gradient entry in an RMSprop case"
            assert RMSPROP_EPS / (2.0 * min_v) < 1e-13, (min_v, RMSPROP_EPS)

        for a, b in zip(t_losses, n_losses):
            assert abs(a - b) <= 1e-12 * max(1.0, abs(b)), (case["name"], a, b)
        for k in PARAM_NAMES:
            diff = np.abs(t_final[k] - n_final[k]).max()
            scale = max(1.0, np.abs(n_final[k]).max())
            assert diff <= 1e-12 * scale, (case["name"], k, diff)
        # The weights must actually have moved.
        moved = max(np.abs(t_final[k] - init[k]).max() for k in PARAM_NAMES)
        assert moved > 1e-4, (case["name"], moved)

        entry = dict(case)
        entry["losses"] = [float(v) for v in t_losses]
        entry["final"] = {k: flat(t_final[k]) for k in PARAM_NAMES}
        out["cases"].append(entry)
        print("%-17s losses %s" % (case["name"],
              " ".join("%.10f" % v for v in t_losses)))

    with open(OUT_PATH, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print("wrote", os.path.relpath(OUT_PATH))


if __name__ == "__main__":
    main()
