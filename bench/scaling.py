#!/usr/bin/env python3
"""Scaling study driver: generates the cases, launches the runs, and writes a CSV, a markdown
table and a PNG plot of time, speedup and efficiency against the GPU count.

    bench/scaling.py --gpus 1 2 [4 8] --study strong2d|weak3d|strong3d [--steps N] [--steady]
                     [--tessera BIN] [--out bench/results] [--launcher "mpirun -np {n}"]
                     [--set KEY=VALUE ...] [--scale K]

strong2d: 2D 5-point heat, forward Euler, 20480^2 fp64 (the GPU issue's item 1);
weak3d:   3D 7-point heat, 512^3 fp64 per GPU, the grid grown along x (RCB then cuts z at 2 GPUs);
strong3d: 3D 7-point heat, 1024^3 fp64.
--scale K divides every grid length by K: a smoke run of the plumbing whose figures mean nothing.
Throughput is report.json's cells_per_second (cells x steps / step-loop wall time, which
excludes set-up and output). Efficiency: strong = speedup / (n / n0); weak = (cells/s per
GPU) / (cells/s per GPU at n0). --steady also runs each case for 3N steps and takes the rate
from the difference (2N steps of steady stepping: the loop's fixed costs, such as each kernel's
first launch loading its module and the monitors at both ends, cancel); the table then shows
both, and speedup and efficiency come from the steady rate. Multi-node: pass --launcher "srun -n {n}" or a hostfile.
--tessera: by default build/tessera (run from the checkout), or, where this script is installed
(cmake --install: PREFIX/share/tessera/bench/scaling.py), the tessera installed with it."""
import argparse, csv, json, os, subprocess, sys, time

CASE = """name: {name}
model: heat
backend: cuda
grid: {{cells: {cells}}}
initial: {{u: "{init}"}}
boundary: {{default: {{type: dirichlet, value: 0}}}}
time: {{scheme: euler, dt: auto, steps: {steps}}}
output: {{monitor_every: 100, progress: lines}}
"""

def default_tessera():
    """The tessera installed with this script, else build/tessera (a checkout)."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:  # cmake --install writes the path from here to the installed binary
        with open(os.path.join(here, "tessera_path")) as f:
            return os.path.normpath(os.path.join(here, f.read().strip()))
    except OSError:
        return "build/tessera"

def case_for(study, n, scale=1):
    if study == "strong2d":
        cells, init = [20480, 20480], "x*(1 - x)*y*(1 - y)"
    elif study == "weak3d":
        cells, init = [512 * n, 512, 512], "x*(1 - x)*y*(1 - y)*z*(1 - z)"
    elif study == "strong3d":
        cells, init = [1024, 1024, 1024], "x*(1 - x)*y*(1 - y)*z*(1 - z)"
    else:
        raise SystemExit(f"unknown study {study}")
    return [max(c // scale, 8) for c in cells], init

def run(a, n, path, run_dir, steps):
    """report.json of the case at path run for steps on n GPUs."""
    cmd = a.launcher.format(n=n).split() + [a.tessera, "run", path, "--out", run_dir,
                                            "--set", f"time.steps={steps}"]
    for kv in a.set:
        cmd += ["--set", kv]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-2000:] + p.stderr[-2000:])
        raise SystemExit(f"scaling: {' '.join(cmd)} failed")
    r = json.load(open(os.path.join(run_dir, "report.json")))
    try:
        os.remove(os.path.join(run_dir, "final.h5"))  # GBs of fields nobody reads here
    except OSError:
        pass
    return r

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpus", type=int, nargs="+", required=True)
    ap.add_argument("--study", default="strong2d", choices=["strong2d", "weak3d", "strong3d"])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--tessera", default=default_tessera(),
                    help="the tessera binary (default: %(default)s)")
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--launcher", default="mpirun -np {n}")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a case key for every run (tessera run --set), e.g. gpu.graphs=on")
    ap.add_argument("--scale", type=int, default=1,
                    help="divide every grid length by K (a smoke run; figures mean nothing)")
    ap.add_argument("--steady", action="store_true",
                    help="also run 3x the steps; rates and efficiency from the difference")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for n in a.gpus:
        cells, init = case_for(a.study, n, a.scale)
        total = 1
        for c in cells:
            total *= c
        name = f"{a.study}_{n}gpu"
        path = os.path.join(a.out, name + ".yaml")
        with open(path, "w") as f:
            f.write(CASE.format(name=name, cells=cells, init=init, steps=a.steps))
        run_dir = os.path.join(a.out, "run_" + name)
        t0 = time.time()
        r = run(a, n, path, run_dir, a.steps)
        row = dict(study=a.study, gpus=n, cells=total, steps=r["steps"], wall_s=r["wall_time"],
                   cells_per_s=r["cells_per_second"], halo_wait_s=r["phases_max_over_ranks"]["halo_wait"],
                   gpu_graphs=r.get("gpu_graphs", ""))
        if a.steady:
            # the same case for 3x the steps: the difference is 2x steps of steady stepping,
            # without the loop's fixed costs (each kernel's first launch loads its module; the
            # monitors at both ends)
            r3 = run(a, n, path, run_dir, 3 * a.steps)
            row["steady_cells_per_s"] = total * 2 * a.steps / (r3["wall_time"] - r["wall_time"])
        row["process_s"] = round(time.time() - t0, 2)
        rows.append(row)
    base = rows[0]
    rate = "steady_cells_per_s" if a.steady else "cells_per_s"
    for r in rows:
        ratio = r["gpus"] / base["gpus"]
        # strong: the same cells and steps, so the ratio of rates is the ratio of times; weak:
        # the ratio of rates over the ratio of GPUs is the rate per GPU against the base's
        r["speedup"] = r[rate] / base[rate]
        r["efficiency"] = r["speedup"] / ratio
        r["loop_efficiency"] = (r["cells_per_s"] / base["cells_per_s"]) / ratio
    stem = os.path.join(a.out, a.study)
    with open(stem + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    with open(stem + ".md", "w") as f:
        f.write("| GPUs | cells | steps | step-loop s | Gcells/s (loop) | efficiency (loop) |"
                + (" Gcells/s (steady) |" if a.steady else "") + " speedup | efficiency |\n")
        f.write("|---" * (9 if a.steady else 8) + "|\n")
        for r in rows:
            f.write(f"| {r['gpus']} | {r['cells']} | {r['steps']} | {r['wall_s']:.4f} | {r['cells_per_s']/1e9:.1f} | "
                    f"{100*r['loop_efficiency']:.1f}% |"
                    + (f" {r['steady_cells_per_s']/1e9:.1f} |" if a.steady else "")
                    + f" {r['speedup']:.3f} | {100*r['efficiency']:.1f}% |\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(1, 3, figsize=(12, 3.5))
        g = [r["gpus"] for r in rows]
        ax[0].plot(g, [r["wall_s"] for r in rows], "o-"); ax[0].set_title("step-loop time (s)")
        ax[1].plot(g, [r["speedup"] for r in rows], "o-", label="tessera")
        ax[1].plot(g, [x / g[0] for x in g], "k--", label="ideal")
        ax[1].set_title("speedup"); ax[1].legend()
        ax[2].plot(g, [100 * r["efficiency"] for r in rows], "o-"); ax[2].set_ylim(0, 105); ax[2].set_title("efficiency (%)")
        for x in ax:
            x.set_xlabel("GPUs"); x.set_xticks(g)
        fig.suptitle(f"tessera {a.study}")
        fig.tight_layout()
        fig.savefig(stem + ".png", dpi=100)
    except ImportError:
        print("scaling: matplotlib not found, no plot", file=sys.stderr)
    print(open(stem + ".md").read())

if __name__ == "__main__":
    main()
