"""Keras 3 peer baseline: Fashion-MNIST training throughput (samples/s), JAX CPU backend.

The same MLP and CNN as bench/torch_fashion_mnist.py and Tandem's bench_fashion_mnist, trained with
Adam(1e-3) and sparse cross-entropy from logits on the training set held in memory. Keras in its
fastest configuration here: the step compiled by XLA (jit_compile) and `steps_per_execution`
steps per compiled call, so Python runs once per group of steps. For each batch size: a warm-up
fit of 20 steps (which compiles), then a timed fit over the remaining full batches of one epoch
(or the fraction given by --epochs-fraction), rounded down to whole groups.

Run it with a Python that has keras>=3 and jax[cpu] (bench/run_benchmark.sh makes one in a virtual
environment beside the Tandem binary).
"""

import argparse
import gzip
import json
import os
import struct
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "jax")

import numpy as np  # noqa: E402

DEFAULT_DATA_DIR = "/usr/share/datasets/fashion-mnist"
EPOCH_ROWS = 60000
WARMUP_STEPS = 20


def read_idx(path, magic_expected, header):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    fields = struct.unpack(">" + "I" * header, raw[:4 * header])
    if fields[0] != magic_expected:
        raise ValueError(f"{path}: bad magic 0x{fields[0]:08x}")
    return np.frombuffer(raw, dtype=np.uint8, offset=4 * header), fields


def build_model(name):
    import keras
    from keras import layers

    if name == "mlp":
        return keras.Sequential([keras.Input((28, 28)), layers.Flatten(), layers.Dense(256, activation="relu"),
                                 layers.Dense(256, activation="relu"), layers.Dense(10)])
    return keras.Sequential([keras.Input((28, 28, 1)), layers.Conv2D(32, 3, activation="relu"), layers.MaxPooling2D(2),
                             layers.Conv2D(64, 3, activation="relu"), layers.MaxPooling2D(2), layers.Flatten(),
                             layers.Dense(128, activation="relu"), layers.Dense(10)])


def measure(model_name, batch, images, labels, epochs_fraction, per_call):
    import keras

    keras.utils.set_random_seed(0)
    model = build_model(model_name)
    full_batches = images.shape[0] // batch
    timed = max(1, int((full_batches - WARMUP_STEPS) * epochs_fraction))
    per_call = min(per_call, timed)  # whole groups only: a remainder would compile a second step
    timed = timed // per_call * per_call
    warmup = -(-WARMUP_STEPS // per_call) * per_call
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=True, steps_per_execution=per_call)
    rows = batch * (warmup + timed)
    x, y = images[:rows], labels[:rows]
    model.fit(x[:batch * warmup], y[:batch * warmup], batch_size=batch, epochs=1, shuffle=False, verbose=0)
    t0 = time.perf_counter()
    model.fit(x[batch * warmup:], y[batch * warmup:], batch_size=batch, epochs=1, shuffle=False, verbose=0)
    elapsed = time.perf_counter() - t0
    return timed * batch, elapsed


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    p.add_argument("--batch-sizes", default="32,128,512")
    p.add_argument("--epochs-fraction", type=float, default=1.0)
    p.add_argument("--steps-per-execution", type=int, default=20)
    p.add_argument("--data-dir", default=DEFAULT_DATA_DIR)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if not (0.0 < args.epochs_fraction <= 1.0):
        p.error("--epochs-fraction must be in (0, 1]")

    pixels, (_, n, rows, cols) = read_idx(os.path.join(args.data_dir, "train-images-idx3-ubyte.gz"), 0x803, 4)
    images = (pixels[:n * rows * cols].reshape(n, rows, cols).astype(np.float32) / np.float32(255.0))[:EPOCH_ROWS]
    if args.model == "cnn":
        images = images[..., None]
    raw_labels, _ = read_idx(os.path.join(args.data_dir, "train-labels-idx1-ubyte.gz"), 0x801, 2)
    labels = raw_labels[:n].astype(np.int32)[:EPOCH_ROWS]

    import keras

    for batch in [int(b) for b in args.batch_sizes.split(",")]:
        samples, seconds = measure(args.model, batch, images, labels, args.epochs_fraction, args.steps_per_execution)
        rate = samples / seconds
        if args.json:
            print(json.dumps({"peer": "keras", "model": args.model, "batch": batch, "samples_per_s": round(rate, 1),
                              "keras": keras.__version__, "steps_per_execution": args.steps_per_execution}))
        else:
            print(f"keras {args.model} batch={batch:<4d} {rate:10.0f} samples/s  ({samples} samples in {seconds:.3f} s)")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
