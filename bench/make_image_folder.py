#!/usr/bin/python3
"""Writes Fashion-MNIST training images as PNG files in class subfolders (0/ ... 9/), the layout
image_dataset_from_directory and torchvision's ImageFolder read, for the input-pipeline benchmark.

    bench/make_image_folder.py OUT_DIR [--images N] [--size S]

--size enlarges the 28x28 images (nearest neighbour) so that decoding weighs as it does for larger
photos; the default 28 keeps them as they are. Files are named by their index in the training set.
Needs Pillow (Debian python3-pil).
"""
import argparse
import gzip
import struct
from pathlib import Path

import numpy as np
from PIL import Image

DATA = "/usr/share/datasets/fashion-mnist"


def read_idx(path, magic_expected, header):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    fields = struct.unpack(">" + "I" * header, raw[: 4 * header])
    if fields[0] != magic_expected:
        raise SystemExit(f"{path}: bad magic 0x{fields[0]:08x}")
    return fields, np.frombuffer(raw, dtype=np.uint8, offset=4 * header)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--images", type=int, default=60000)
    parser.add_argument("--size", type=int, default=28)
    a = parser.parse_args()
    (_, n, rows, cols), pixels = read_idx(f"{DATA}/train-images-idx3-ubyte.gz", 0x803, 4)
    _, labels = read_idx(f"{DATA}/train-labels-idx1-ubyte.gz", 0x801, 2)
    images = pixels.reshape(n, rows, cols)
    out = Path(a.out)
    for c in range(10):
        (out / str(c)).mkdir(parents=True, exist_ok=True)
    for i in range(min(a.images, n)):
        image = Image.fromarray(images[i], mode="L")
        if a.size != rows:
            image = image.resize((a.size, a.size), Image.NEAREST)
        image.save(out / str(labels[i]) / f"{i:06d}.png")
    print(f"{min(a.images, n)} images of {a.size}x{a.size} in {out}")


if __name__ == "__main__":
    main()
