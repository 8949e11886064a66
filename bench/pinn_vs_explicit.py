#!/usr/bin/env python3
"""Compares the final fields of one case solved twice, by method explicit and method pinn.

    bench/pinn_vs_explicit.py EXPLICIT_DIR PINN_DIR [--out FILE.png] [--json FILE]

Each directory holds a run's final.h5 (fields/<name> on the grid's cell centres, attributes
lo, hi, cells, time; the explicit run's case_text gives exact:). The two must be the same grid at the same time. For each
component it prints the relative L2 difference ||u_pinn - u_explicit|| / ||u_explicit||, and,
when the case has `exact:` (read from case_text, evaluated here with numpy: muparser's
functions and `^`, the case's params as names), each method's relative L2 error against it.
The PNG has one row per component: the explicit field, the PINN field, their difference and,
with an exact solution, each method's error. Exits 1 when the runs do not match (grid, time,
components), 2 on bad input. Needs numpy, h5py, matplotlib, PyYAML (Debian python3-*)."""
import argparse
import json
import math
import os
import sys

import h5py
import numpy as np

FUNCS = {n: getattr(np, n) for n in ("sin", "cos", "tan", "exp", "sqrt", "tanh", "sinh",
                                     "cosh", "arctan", "abs", "floor")}
FUNCS.update(asin=np.arcsin, acos=np.arccos, atan=np.arctan, ln=np.log, log=np.log,
             log10=np.log10, log2=np.log2, min=np.minimum, max=np.maximum, sign=np.sign,
             rint=np.rint, pi=math.pi, _e=math.e)


def read_final(d):
    path = os.path.join(d, "final.h5")
    with h5py.File(path, "r") as h:
        fields = {k: np.asarray(h["fields"][k], dtype=np.float64) for k in h["fields"]}
        a = {k: h.attrs[k] for k in ("lo", "hi", "cells", "time")}
        text = h.attrs.get("case_text", b"")  # a PINN run's final.h5 has none
    text = text.decode() if isinstance(text, bytes) else str(text)
    return fields, a, text


def centres(a, shape):
    """Cell-centre coordinates x, y, z broadcast to the field's shape (z fastest in the
    file's C order: the field is stored [nz][ny][nx] or [ny][nx])."""
    lo, hi = np.atleast_1d(a["lo"]), np.atleast_1d(a["hi"])
    dim = len(lo)
    axes = []
    for ax in range(dim):
        n = shape[len(shape) - 1 - ax]
        axes.append(lo[ax] + (np.arange(n) + 0.5) * (hi[ax] - lo[ax]) / n)
    grids = np.meshgrid(*axes[::-1], indexing="ij")[::-1]  # x varies along the last axis
    names = ["x", "y", "z"]
    out = {names[i]: grids[i] for i in range(dim)}
    for n in names[dim:]:
        out[n] = np.zeros(shape)
    return out


def exact_fields(case_text, a, shape):
    """{component: exact field at the final time}, {} without exact:, or raises."""
    import yaml
    case = yaml.safe_load(case_text)
    exact = case.get("exact") or {}
    if not exact:
        return {}
    names = dict(FUNCS)
    for k, v in (case.get("params") or {}).items():
        names[k] = float(v)
    names.update(centres(a, shape))
    names["t"] = float(a["time"])
    out = {}
    for comp, expr in exact.items():
        py = str(expr).replace("^", "**")
        out[comp] = np.broadcast_to(np.asarray(eval(py, {"__builtins__": {}}, names),
                                               dtype=np.float64), shape)
    return out


def rel(a, b):
    den = float(np.linalg.norm(b))
    return float(np.linalg.norm(a - b)) / (den if den > 0 else 1.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("explicit")
    ap.add_argument("pinn")
    ap.add_argument("--out", default=None, help="PNG (default PINN_DIR/../pinn_vs_explicit.png)")
    ap.add_argument("--json", default=None, help="also write the numbers as JSON here")
    args = ap.parse_args()
    try:
        fe, ae, text = read_final(args.explicit)
        fp, ap_, _ = read_final(args.pinn)
    except (OSError, KeyError) as e:
        print(f"pinn_vs_explicit: {e}", file=sys.stderr)
        return 2
    if list(np.atleast_1d(ae["cells"])) != list(np.atleast_1d(ap_["cells"])):
        print(f"pinn_vs_explicit: grids differ: {ae['cells']} and {ap_['cells']}", file=sys.stderr)
        return 1
    if abs(float(ae["time"]) - float(ap_["time"])) > 1e-12 * max(1.0, abs(float(ae["time"]))):
        print(f"pinn_vs_explicit: times differ: {ae['time']} and {ap_['time']}", file=sys.stderr)
        return 1
    if set(fe) != set(fp):
        print(f"pinn_vs_explicit: components differ: {sorted(fe)} and {sorted(fp)}",
              file=sys.stderr)
        return 1
    comps = sorted(fe)
    shape = fe[comps[0]].shape
    try:
        ex = exact_fields(text, ae, shape)
    except Exception as e:  # an expression numpy cannot read: compare the methods only
        print(f"pinn_vs_explicit: exact: not evaluated here ({e}); comparing the methods only")
        ex = {}
    rec = {"time": float(ae["time"]), "cells": [int(c) for c in np.atleast_1d(ae["cells"])],
           "components": {}}
    for c in comps:
        r = {"rel_l2_pinn_vs_explicit": rel(fp[c], fe[c]),
             "max_abs_diff": float(np.max(np.abs(fp[c] - fe[c])))}
        if c in ex:
            r["rel_l2_explicit_vs_exact"] = rel(fe[c], ex[c])
            r["rel_l2_pinn_vs_exact"] = rel(fp[c], ex[c])
        rec["components"][c] = r
        line = (f"{c}: t = {rec['time']:g}, relative L2 pinn vs explicit {r['rel_l2_pinn_vs_explicit']:.3e}"
                f" (max |diff| {r['max_abs_diff']:.3e})")
        if c in ex:
            line += (f"; vs exact: explicit {r['rel_l2_explicit_vs_exact']:.3e}, "
                     f"pinn {r['rel_l2_pinn_vs_exact']:.3e}")
        print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rec, f, indent=2)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("pinn_vs_explicit: no matplotlib, no PNG", file=sys.stderr)
        return 2
    png = args.out or os.path.join(os.path.dirname(os.path.abspath(args.pinn)),
                                   "pinn_vs_explicit.png")
    ncol = 5 if ex else 3
    fig, axs = plt.subplots(len(comps), ncol, figsize=(3.4 * ncol, 3.0 * len(comps)),
                            squeeze=False)
    lo, hi = np.atleast_1d(ae["lo"]), np.atleast_1d(ae["hi"])
    extent = [lo[0], hi[0], lo[1] if len(lo) > 1 else 0, hi[1] if len(hi) > 1 else 1]
    for i, c in enumerate(comps):
        # a 3-D field: its middle z plane; a 1-D one is stored one cell high
        sl = (lambda f: f[f.shape[0] // 2]) if fe[c].ndim == 3 else (lambda f: f.reshape(-1, f.shape[-1]))
        panels = [("explicit", sl(fe[c]), "viridis"), ("pinn", sl(fp[c]), "viridis"),
                  ("pinn - explicit", sl(fp[c] - fe[c]), "RdBu_r")]
        if c in ex:
            panels += [("explicit - exact", sl(fe[c] - ex[c]), "RdBu_r"),
                       ("pinn - exact", sl(fp[c] - ex[c]), "RdBu_r")]
        vmin = min(float(np.min(p[1])) for p in panels[:2])
        vmax = max(float(np.max(p[1])) for p in panels[:2])
        for j, (title, f, cmap) in enumerate(panels):
            ax = axs[i][j]
            kw = {"vmin": vmin, "vmax": vmax} if j < 2 else {}
            if j >= 2:
                m = float(np.max(np.abs(f))) or 1.0
                kw = {"vmin": -m, "vmax": m}
            im = ax.imshow(f, origin="lower", extent=extent, cmap=cmap, aspect="auto", **kw)
            ax.set_title(f"{c}: {title}", fontsize=9)
            fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04, format="%.1e" if j >= 2 else None)
    r = rec["components"][comps[0]]
    fig.suptitle(f"t = {rec['time']:g}, {comps[0]}: relative L2 pinn vs explicit "
                 f"{r['rel_l2_pinn_vs_explicit']:.2e}", fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print(f"wrote {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
