#!/usr/bin/env python3
"""Where a GPU step's time goes: every kernel of a short tessera run timed by Nsight Compute.

    bench/profile_step.py --np N --cells NX NY [NZ] [--steps S] [--plain-steps P] [--tessera build-gpu/tessera]
                          [--out DIR] [--work DIR] [--tag T] [--set KEY=VALUE ...]

Runs the heat case (forward Euler, Dirichlet 0 on every face, fp64, backend cuda) on N ranks
(one GPU each): plainly for P and 3P steps, whose step-loop times (report.json) give the
marginal wall time of a step (the loop's fixed costs cancel), and for S steps under `ncu --metrics gpu__time_duration.sum --clock-control none`, which runs the kernels
one at a time and times each (NCCL's kernels are left out: they wait for their peers, and
ncu's serialisation would only time that waiting). Prints per rank a table of kernel kind x
launch shape: launches per step and µs per step, and the sum, against the wall time per step;
the difference is what the step spends outside these kernels (the exchange that is not hidden,
launch gaps, waits). Writes profile_np<N><tag>.json into --out; the runs and ncu's CSVs stay in --work."""
import argparse, csv, glob, json, os, re, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scaling import CASE  # the scaling study's heat case: the same physics, boundary and backend


def kind(name):
    """A short name for a kernel: its function name without namespaces or template args."""
    base = name.replace("(anonymous namespace)::", "").replace("<unnamed>::", "")
    base = re.sub(r"^void ", "", base)
    base = re.sub(r"<.*", "", base)
    base = re.sub(r"\(.*", "", base)
    return base.split("::")[-1].strip() or name


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--np", type=int, default=1)
    ap.add_argument("--cells", type=int, nargs="+", required=True)
    ap.add_argument("--steps", type=int, default=20, help="steps of the profiled run")
    ap.add_argument("--plain-steps", type=int, default=400, help="steps of the timed run")
    ap.add_argument("--tessera", default="build-gpu/tessera")
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--work", default="/tmp/tessera_profile", help="runs and raw CSVs go here")
    ap.add_argument("--tag", default="", help="added to the JSON's name")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--launcher", default="mpirun --bind-to none -np {n}")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    dim = len(a.cells)
    init = "*".join(f"{v}*(1 - {v})" for v in "xyz"[:dim])
    work = os.path.abspath(os.path.join(a.work, f"np{a.np}{a.tag}"))
    os.makedirs(work, exist_ok=True)
    case = os.path.join(work, "case.yaml")
    with open(case, "w") as f:
        f.write(CASE.format(name="profile", cells=list(a.cells), init=init, steps=a.steps))
    # a monitor only at both ends: its reduction is not a step's cost
    sets = sum((["--set", s] for s in ["output.monitor_every=1000000"] + a.set), [])
    launch = a.launcher.format(n=a.np).split()
    walls = []
    for steps in (a.plain_steps, 3 * a.plain_steps):
        plain = launch + [a.tessera, "run", case, "--out", os.path.join(work, "plain"),
                          "--set", f"time.steps={steps}"] + sets
        subprocess.run(plain, check=True, stdout=subprocess.DEVNULL)
        rep = json.load(open(os.path.join(work, "plain", "report.json")))
        walls.append(rep["wall_time"])
    # the marginal time of a step: the loop's fixed costs (the first launch of each kernel
    # loads its module, the monitors at both ends) cancel out
    wall_step = (walls[1] - walls[0]) / (2 * a.plain_steps)
    for old in glob.glob(os.path.join(work, "ncu.*.csv")):
        os.remove(old)
    ncu = ["ncu", "--csv", "--page", "raw", "--metrics", "gpu__time_duration.sum",
           "--clock-control", "none", "--print-units", "base", "-k", "regex:^(?!nccl)",
           "--log-file", os.path.join(work, "ncu.%q{OMPI_COMM_WORLD_RANK}.csv")]
    prof = launch + ncu + [a.tessera, "run", case, "--out", os.path.join(work, "ncu")] + sets
    subprocess.run(prof, check=True, stdout=subprocess.DEVNULL)
    ranks = []
    for path in sorted(glob.glob(os.path.join(work, "ncu.*.csv"))):
        lines = [l for l in open(path) if l.startswith('"')]
        rows = list(csv.DictReader(lines))
        unit = rows[0]["gpu__time_duration.sum"]  # the second row holds the units
        to_us = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3,
                 "s": 1e6, "second": 1e6}[unit.strip()]
        rows = rows[1:]
        table = {}
        seq = [[kind(r["Kernel Name"]), r["Grid Size"],
                round(float(r["gpu__time_duration.sum"].replace(",", "")) * to_us, 2)] for r in rows]
        for r in rows:
            key = (kind(r["Kernel Name"]), r["Grid Size"], r["Block Size"])
            t = table.setdefault(key, [0, 0.0])
            t[0] += 1
            t[1] += float(r["gpu__time_duration.sum"].replace(",", "")) * to_us
        ranks.append({"file": os.path.basename(path), "launches_in_order": seq,
                      "kernels": [dict(kernel=k[0], grid=k[1], block=k[2], launches=v[0],
                                       us_total=v[1]) for k, v in sorted(table.items(), key=lambda kv: -kv[1][1])]})
    cells = 1
    for v in a.cells:
        cells *= v
    print(f"profile: {a.np} rank(s), cells {a.cells}; wall {1e6 * wall_step:.1f} us/step marginal "
          f"({cells / wall_step / 1e9:.1f} Gcells/s; whole loop of {3 * a.plain_steps} steps "
          f"{1e6 * walls[1] / (3 * a.plain_steps):.1f} us/step); ncu over {a.steps} steps")
    for i, r in enumerate(ranks):
        print(f"rank {i}: kernel, grid, block, launches/step, us/step (those with one launch per run are set-up and the monitor)")
        per_step = 0.0
        for k in r["kernels"]:
            lps = k["launches"] / a.steps
            ups = k["us_total"] / a.steps
            if k["launches"] >= a.steps:
                per_step += ups
            print(f"  {k['kernel'][:40]:40s} {k['grid']:>16s} {k['block']:>12s} {lps:8.2f} {ups:10.2f}")
        r["kernel_us_per_step"] = per_step
        print(f"  sum of kernels launched every step: {per_step:.1f} us/step; wall {1e6 * wall_step:.1f}; "
              f"outside these kernels {1e6 * wall_step - per_step:.1f} us/step")
    with open(os.path.join(a.out, f"profile_np{a.np}{a.tag}.json"), "w") as f:
        json.dump(dict(np=a.np, cells=a.cells, steps=a.steps, wall_us_per_step=1e6 * wall_step,
                       loop_walls_s=walls, plain_steps=[a.plain_steps, 3 * a.plain_steps], ranks=ranks), f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
