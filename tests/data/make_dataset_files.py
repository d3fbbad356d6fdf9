#!/usr/bin/env python3
"""Writes the dataset fixtures under tests/data/datasets with Python's own writers: csv (RFC 4180
quoting, a quoted header with a comma, a quoted number, CRLF line ends) and h5py. expected.json holds
the values given to the writers, which tests/test_dataset_files.cpp compares Tandem's readers with.
Run: /usr/bin/python3 tests/data/make_dataset_files.py (needs python3-h5py and python3-numpy)."""
import csv
import json
import os

import h5py
import numpy as np

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "datasets")
os.makedirs(here, exist_ok=True)
rng = np.random.default_rng(7)

header = ["width, cm", "height", "label", "note \"q\""]
rows = []
for i in range(6):
    rows.append([round(float(rng.normal()), 4), round(float(rng.uniform(-50, 50)), 3), int(i % 3), float(i) * 0.5])
with open(os.path.join(here, "table.csv"), "w", newline="") as f:
    w = csv.writer(f, quoting=csv.QUOTE_MINIMAL, lineterminator="\r\n")
    w.writerow(header)
    for r in rows:
        w.writerow([r[0], f"{r[1]}", r[2], r[3]])
with open(os.path.join(here, "quoted.csv"), "w", newline="") as f:
    w = csv.writer(f, quoting=csv.QUOTE_ALL, delimiter=";")
    w.writerow(header)
    for r in rows:
        w.writerow(r)

x64 = rng.normal(size=(5, 3))
y64 = np.arange(5, dtype=np.int64) * 3 - 4
xu8 = rng.integers(0, 256, size=(4, 2, 2), dtype=np.uint8)
yu8 = np.array([1, 0, 2, 1], dtype=np.uint8)
with h5py.File(os.path.join(here, "arrays.h5"), "w") as f:
    f["x"] = x64
    f["y"] = y64
    f["images"] = xu8
    f["classes"] = yu8
    f["ragged"] = np.zeros((3, 2), dtype=np.float32)
    f.create_group("group")

with open(os.path.join(here, "expected.json"), "w") as f:
    json.dump({"csv_rows": rows, "x64": x64.tolist(), "y64": y64.tolist(),
               "xu8": xu8.astype(int).tolist(), "yu8": yu8.astype(int).tolist()}, f, indent=1)
