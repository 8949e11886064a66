#!/usr/bin/env python3
"""Relative L2 error of a PINN run's snapshots against a reference CSV (t,x,u rows, '#' comment
lines first: tests/data/*_ref.csv). Every snapshot whose time the reference has is compared
at the reference's x (the run's grid must be the reference's cell centres). Prints the error;
exits 1 when no snapshot matches a reference time or the grids differ."""
import csv
import glob
import os
import sys

import h5py
import numpy as np


def main():
    run, ref_path = sys.argv[1], sys.argv[2]
    with open(ref_path) as f:
        rows = [r for r in csv.reader(line for line in f if not line.startswith("#"))]
    head, rows = rows[0], np.array(rows[1:], dtype=float)
    it, ix, iu = head.index("t"), head.index("x"), head.index("u")
    num = den = 0.0
    matched = 0
    for path in sorted(glob.glob(os.path.join(run, "snapshot_*.h5"))):
        with h5py.File(path, "r") as h:
            t = float(h.attrs["time"])
            u = np.asarray(h["fields/u"]).ravel()
            lo, hi = float(h.attrs["lo"][0]), float(h.attrs["hi"][0])
        sel = rows[np.abs(rows[:, it] - t) < 1e-9]
        if not len(sel):
            continue
        x = lo + (np.arange(u.size) + 0.5) * (hi - lo) / u.size
        order = np.argsort(sel[:, ix])
        xr, ur = sel[order, ix], sel[order, iu]
        if xr.size != x.size or np.max(np.abs(xr - x)) > 1e-9:
            print(f"{path}: grid of {u.size} cells is not the reference's {xr.size} x values")
            return 1
        num += float(np.sum((u - ur) ** 2))
        den += float(np.sum(ur ** 2))
        matched += 1
    if not matched:
        print(f"no snapshot of {run} is at a time of {ref_path}")
        return 1
    print(f"{np.sqrt(num / den):.6g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
