#!/usr/bin/env python3
"""Plots a tessera PINN run's training history to a PNG.

    bench/pinn_plot.py RUN_DIR [--out FILE.png] [--title TEXT]

RUN_DIR holds history.csv: a header line, then one row per recorded iteration with (at least)
the columns iteration,loss,pde,boundary,initial,error_l2,lr,seconds, found by name so that
added columns do no harm. An empty or nan cell (initial for a steady problem, error_l2 without
an exact solution) leaves that point out, and a column with no value is not drawn. Top panel:
the loss and its terms against the iteration, log scale; bottom panel: the relative L2 error
where there is one, else the learning rate. Default output: RUN_DIR/history.png.
Needs matplotlib (Debian: python3-matplotlib); exits 2 without it or on a bad input."""
import argparse, csv, math, os, sys

TERMS = ["loss", "pde", "boundary", "initial"]


def read_history(path):
    """{column: [float or nan]} with every column of the file, iteration included."""
    with open(path, newline="") as f:
        rows = list(csv.reader(row for row in f if row.strip() and not row.startswith("#")))
    if not rows:
        raise ValueError(f"{path}: empty, a header line was expected")
    header = [h.strip() for h in rows[0]]
    if "iteration" not in header:
        raise ValueError(f"{path}:1: no 'iteration' column in the header {','.join(header)}")
    cols = {h: [] for h in header}
    for n, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise ValueError(f"{path}:{n}: {len(row)} fields, the header has {len(header)}")
        for h, cell in zip(header, row):
            cell = cell.strip()
            try:
                cols[h].append(float(cell) if cell else math.nan)
            except ValueError:
                raise ValueError(f"{path}:{n}: column {h}: '{cell}' is not a number") from None
    return cols


def usable(values, positive=False):
    """Whether a column has something to draw (on a log axis: something positive)."""
    return any(math.isfinite(v) and (v > 0 or not positive) for v in values)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("run_dir", help="a tessera PINN run's output directory")
    p.add_argument("--out", default=None, help="PNG to write (default RUN_DIR/history.png)")
    p.add_argument("--title", default=None, help="default: the run directory's name")
    a = p.parse_args(argv)

    path = os.path.join(a.run_dir, "history.csv")
    try:
        h = read_history(path)
    except (OSError, ValueError) as e:
        print(f"pinn_plot.py: {e}", file=sys.stderr)
        return 2
    if not h["iteration"]:
        print(f"pinn_plot.py: {path}: no rows after the header", file=sys.stderr)
        return 2
    try:  # lazily: reading and checking the file needs no matplotlib
        import matplotlib
        matplotlib.use("Agg")  # a file, never a window: runs on machines without a display
        import matplotlib.pyplot as plt
    except ImportError:
        print("pinn_plot.py needs matplotlib: install python3-matplotlib "
              "(apt-get install python3-matplotlib) or pip install matplotlib", file=sys.stderr)
        return 2

    it = h["iteration"]
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(8, 7),
                                      gridspec_kw={"height_ratios": [3, 2]})
    styles = {"loss": dict(color="k", lw=1.8), "pde": dict(color="tab:blue", lw=1),
              "boundary": dict(color="tab:orange", lw=1), "initial": dict(color="tab:green", lw=1)}
    drawn = 0
    for name in TERMS:
        if name in h and usable(h[name], positive=True):
            # nan breaks the line where a value is missing, and log scale drops values <= 0
            top.plot(it, [v if v > 0 else math.nan for v in h[name]], label=name, **styles[name])
            drawn += 1
    top.set_yscale("log")
    top.set_ylabel("loss terms")
    top.grid(True, which="both", alpha=0.3)
    if drawn:
        top.legend(loc="upper right")

    if "error_l2" in h and usable(h["error_l2"], positive=True):
        # measured on fewer iterations than the loss: join the points that exist
        pts = [(i, v) for i, v in zip(it, h["error_l2"]) if math.isfinite(v) and v > 0]
        bottom.plot([i for i, _ in pts], [v for _, v in pts], "o-", ms=2.5, color="tab:red")
        bottom.set_ylabel("relative L2 error")
    elif "lr" in h and usable(h["lr"], positive=True):
        bottom.plot(it, h["lr"], color="tab:purple")
        bottom.set_ylabel("learning rate (no error column)")
    else:
        bottom.text(0.5, 0.5, "no error_l2 or lr values", ha="center", va="center",
                    transform=bottom.transAxes)
    bottom.set_yscale("log")
    bottom.set_xlabel("iteration")
    bottom.grid(True, which="both", alpha=0.3)
    if "seconds" in h and usable(h["seconds"]):
        last = max(v for v in h["seconds"] if math.isfinite(v))
        bottom.set_title(f"{int(it[-1])} iterations, {last:.1f} s", fontsize=9, loc="right")

    title = a.title or os.path.basename(os.path.normpath(os.path.abspath(a.run_dir)))
    top.set_title(title)
    fig.tight_layout()
    out = a.out or os.path.join(a.run_dir, "history.png")
    try:
        fig.savefig(out, dpi=120)
    except OSError as e:
        print(f"pinn_plot.py: cannot write {out}: {e}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
