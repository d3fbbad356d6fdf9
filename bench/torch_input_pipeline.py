#!/usr/bin/python3
"""PyTorch peer baseline: images/s decoded and augmented by a DataLoader.

Reads a folder of PNG files in class subfolders (bench/make_image_folder.py writes one) as
torchvision's ImageFolder does (files sorted within each sorted class folder, decoded with Pillow),
scales each image to float32 in [0, 1] (H, W, 1), and augments it as Tandem's benchmark does: a
horizontal flip with probability 1/2 and a crop of the image padded with 2 zeros on each side
(torchvision's RandomCrop(size, padding=2)). Batches of --batch rows, shuffled. Times one pass over
every image after --warmup untimed batches.

--workers 0 decodes in the main process; N > 0 in N worker processes (PyTorch's DataLoader);
--workers best tries 0, 1 and 2 (the cores) and reports the fastest. --threads sets torch's intra-op threads
in the main process. Run with the Debian interpreter (/usr/bin/python3: torch 1.13, Pillow).
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
from PIL import Image


class ImageFolder(torch.utils.data.Dataset):
    def __init__(self, root, padding=2):
        classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
        self.files = [(os.path.join(root, c, f), i) for i, c in enumerate(classes)
                      for f in sorted(os.listdir(os.path.join(root, c))) if f.lower().endswith((".png", ".jpg", ".jpeg"))]
        self.padding = padding

    def __len__(self):
        return len(self.files)

    def __getitem__(self, index):
        path, label = self.files[index]
        with Image.open(path) as image:
            x = torch.from_numpy(np.asarray(image.convert("L"), dtype=np.float32) / np.float32(255))
        h, w = x.shape
        if torch.rand(()) < 0.5:
            x = torch.flip(x, dims=(1,))
        p = self.padding
        padded = torch.nn.functional.pad(x, (p, p, p, p))
        dy, dx = torch.randint(0, 2 * p + 1, (2,)).tolist()
        return padded[dy:dy + h, dx:dx + w].unsqueeze(-1).contiguous(), label


def images_per_s(folder, batch, workers, warmup):
    data = ImageFolder(folder)
    extra = {"prefetch_factor": 2} if workers else {}  # torch 1.13 refuses it without workers
    loader = torch.utils.data.DataLoader(data, batch_size=batch, shuffle=True, num_workers=workers, **extra)
    seen, start = 0, None
    for i, (x, _) in enumerate(loader):
        if i == warmup:
            start, seen = time.perf_counter(), 0
        seen += x.shape[0]
    if start is None:
        raise SystemExit(f"{folder}: {len(data)} images are fewer than {warmup} warm-up batches of {batch}")
    return seen / (time.perf_counter() - start), len(data)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--workers", default="best")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    a = parser.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    counts = [0, 1, 2] if a.workers == "best" else [int(a.workers)]
    results = {w: images_per_s(a.folder, a.batch, w, a.warmup) for w in counts}
    workers = max(results, key=lambda w: results[w][0])
    rate, n = results[workers]
    out = {"framework": "pytorch", "torch": torch.__version__, "images": n, "batch": a.batch, "threads": a.threads,
           "workers": workers, "images_per_s": rate, "all_workers": {str(w): r for w, (r, _) in results.items()}}
    print(json.dumps(out) if a.json else
          f"PyTorch DataLoader: {rate:,.0f} images/s with num_workers={workers} ({n} images, batch {a.batch}, {a.threads} thread(s))")


if __name__ == "__main__":
    sys.exit(main())
