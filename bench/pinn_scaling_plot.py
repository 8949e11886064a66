#!/usr/bin/env python3
"""The CSV, markdown table and PNG of a bench/pinn_scaling.sh run, as bench/scaling.py writes
them for the classical method: from its summary.json (or a copy, such as
bench/results/pinn_scaling_h200x2.json).

    bench/pinn_scaling_plot.py SUMMARY.json [--out STEM]

STEM (default: SUMMARY's folder + /pinn_scaling) gets, for the weak-scaling part:
  STEM_weak.csv  one row per run: ranks, layout, points a rank, steady it/s, ms an iteration,
                 efficiency against the one-rank run (the plain runs against the plain one),
                 the exchange alone and the estimate of how much of it is hidden
  STEM_weak.md   the same as a markdown table
  STEM_weak.png  ms an iteration and efficiency (with the goal, 0.95, and the published 0.85)
and for the time-to-an-error part (where the summary has it) STEM_tta.csv, .md and .png (the
relative L2 error against training seconds of each run). Without matplotlib the PNGs are
skipped with a note on stderr; the CSV and tables are written either way."""
import argparse, csv, json, os, sys

LAYOUT = {"w1": "one network", "w2_space": "2 boxes in space", "w2_slabs": "2 time slabs (all)",
          "w1_plain": "one network, graphs off", "w2_space_plain": "2 boxes, graphs off"}


def weak_rows(s):
    w = s["weak"]
    rows = []
    for name, q in w["runs"].items():
        ex = w.get("exchange", {}).get(name, {})
        steady = q.get("it_per_s_steady")
        rows.append({
            "run": name, "layout": LAYOUT.get(name, name), "ranks": q["ranks"],
            "points_per_rank": "/".join(str(p) for p in q["points_per_rank"]),
            "it_per_s_steady": steady, "ms_per_iteration": 1e3 / steady if steady else None,
            "efficiency": w.get("efficiency", {}).get(name, 1.0 if q["ranks"] == 1 else None),
            "interface_values_ms": q.get("interface_values_ms_rank0"),
            "exchange_ms": q.get("exchange_ms_rank0"),
            "exchange_hidden": ex.get("hidden_fraction"), "gpu_graphs": q.get("gpu_graphs"),
            "iterations": q["iterations"], "train_seconds": q["train_seconds"]})
    return rows


def fmt(v, f):
    return "-" if v is None else f % v


def write_weak(s, stem):
    rows = weak_rows(s)
    with open(stem + "_weak.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    unit = "GPUs" if s.get("backend") == "cuda" else "ranks"
    with open(stem + "_weak.md", "w") as f:
        f.write(f"Weak scaling of PINN training ({s.get('device', '')}; goal {s.get('goal', 0.95)}, "
                f"published claim {s.get('published_claim_2gpu', 0.85)} at 2 GPUs)\n\n")
        f.write(f"| run | {unit} | points/rank | steady it/s | ms/it | interface values ms | "
                "exchange ms | hidden | graphs | efficiency |\n")
        f.write("|---" * 10 + "|\n")
        for r in rows:
            f.write(f"| {r['run']} ({r['layout']}) | {r['ranks']} | {r['points_per_rank']} | "
                    f"{fmt(r['it_per_s_steady'], '%.1f')} | {fmt(r['ms_per_iteration'], '%.3f')} | "
                    f"{fmt(r['interface_values_ms'], '%.3f')} | {fmt(r['exchange_ms'], '%.3f')} | "
                    f"{fmt(r['exchange_hidden'] and 100 * r['exchange_hidden'], '%.0f%%')} | "
                    f"{r['gpu_graphs'] or '-'} | {fmt(r['efficiency'], '%.3f')} |\n")
    return rows


def write_tta(s, stem):
    t = s["time_to_error"]
    rows = []
    for name, q in t["runs"].items():
        row = {"run": name, "layout": q["label"], "ranks": q["ranks"],
               "final_error": q["final_error"], "iterations": q["iterations"],
               "train_seconds": q["train_seconds"], "it_per_s": q["it_per_s"]}
        for e, sec in q.get("seconds_to", {}).items():
            row["seconds_to_" + e] = sec
        rows.append(row)
    keys = list(rows[0].keys())
    with open(stem + "_tta.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    ladder = [k[len("seconds_to_"):] for k in keys if k.startswith("seconds_to_")]
    with open(stem + "_tta.md", "w") as f:
        f.write(f"Training seconds to each relative L2 error, {t['case']} ({s.get('device', '')})\n\n")
        f.write("| run | " + " | ".join(ladder) + " | final error | it/s |\n")
        f.write("|---" * (len(ladder) + 3) + "|\n")
        for r in rows:
            f.write(f"| {r['layout']} | " + " | ".join(fmt(r['seconds_to_' + e], '%.2f') for e in ladder)
                    + f" | {fmt(r['final_error'], '%.2e')} | {fmt(r['it_per_s'], '%.0f')} |\n")
    return rows


def plots(s, stem, weak, has_tta):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("pinn_scaling_plot: matplotlib not found, no PNG (the CSV and tables are written)",
              file=sys.stderr)
        return
    if weak:
        fig, ax = plt.subplots(1, 2, figsize=(11, 3.8))
        names = [r["run"] for r in weak]
        ms = [r["ms_per_iteration"] or 0 for r in weak]
        ax[0].barh(names, ms, color=["C0" if r["ranks"] == 1 else "C1" for r in weak])
        ax[0].set_xlabel("ms an iteration (steady)")
        ax[0].invert_yaxis()
        two = [r for r in weak if r["ranks"] > 1 and r["efficiency"] is not None]
        ax[1].bar([r["run"] for r in two], [r["efficiency"] for r in two], color="C1")
        ax[1].axhline(s.get("goal", 0.95), color="k", ls="--", label="goal")
        ax[1].axhline(s.get("published_claim_2gpu", 0.85), color="r", ls=":", label="published claim")
        ax[1].set_ylim(0, 1.05)
        ax[1].set_ylabel("weak-scaling efficiency, 1 -> 2")
        ax[1].legend(loc="lower right")
        fig.suptitle(f"tessera PINN weak scaling ({s.get('device', '')})", fontsize=9)
        fig.tight_layout()
        fig.savefig(stem + "_weak.png", dpi=100)
        plt.close(fig)
    if has_tta:
        t = s["time_to_error"]
        fig, ax = plt.subplots(figsize=(6, 4))
        for name, q in t["runs"].items():
            r = s.get("reports", {}).get(name)
            if not r:
                continue
            cols = r["history_columns"]
            sec = [h[cols.index("seconds")] for h in r["history"]]
            err = [h[cols.index("error_l2")] for h in r["history"]]
            pts = [(a, b) for a, b in zip(sec, err) if a is not None and b is not None and b > 0]
            if pts:
                ax.loglog(*zip(*pts), label=q["label"])
        ax.axhline(t["target"], color="k", ls="--", lw=0.8)
        ax.set_xlabel("training seconds")
        ax.set_ylabel("relative L2 error")
        ax.legend(fontsize=8)
        ax.set_title(f"time to an error, {t['case']}", fontsize=9)
        fig.tight_layout()
        fig.savefig(stem + "_tta.png", dpi=100)
        plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("summary")
    ap.add_argument("--out", help="stem of the files (default: SUMMARY's folder/pinn_scaling)")
    a = ap.parse_args()
    s = json.load(open(a.summary))
    stem = a.out or os.path.join(os.path.dirname(os.path.abspath(a.summary)), "pinn_scaling")
    weak = write_weak(s, stem) if s.get("weak", {}).get("runs") else None
    has_tta = bool(s.get("time_to_error", {}).get("runs"))
    if has_tta:
        write_tta(s, stem)
    plots(s, stem, weak, has_tta)
    for part in ("_weak", "_tta"):
        if os.path.exists(stem + part + ".md") and (part == "_weak" and weak or part == "_tta" and has_tta):
            print(open(stem + part + ".md").read())
    return 0 if weak or has_tta else 1


if __name__ == "__main__":
    sys.exit(main())
