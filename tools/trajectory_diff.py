"""Two runs' logged trajectories side by side: where a rerun of a published record departs from it.

    python tools/trajectory_diff.py A/metrics.csv B/metrics.csv [--epochs 50]

Reads two CSVLogger ``metrics.csv`` files (any column order) and prints, over the epochs both have (at most
``--epochs``): how many epochs' ``val/f1`` are equal to every logged digit and the largest difference of the
others (with their epochs), and for ``train/loss`` per logged step the first step where the two differ and the
largest relative difference. Standard library only.
"""

from __future__ import annotations

import argparse
import csv
import sys


def read(path: str) -> tuple[dict[int, float], dict[int, tuple[int, float]]]:
    """``(val/f1 by epoch, (epoch, train/loss) by step)`` of one metrics.csv (epochs 0-based, as logged)."""
    val, loss = {}, {}
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row.get("val/f1"):
                val[int(row["epoch"])] = float(row["val/f1"])
            if row.get("train/loss"):
                loss[int(row["step"])] = (int(row["epoch"]), float(row["train/loss"]))
    return val, loss


def compare(a: str, b: str, epochs: int | None) -> dict:
    (val_a, loss_a), (val_b, loss_b) = read(a), read(b)
    shared = sorted(set(val_a) & set(val_b))
    if epochs is not None:
        shared = [e for e in shared if e < epochs]
    differ = {e: val_b[e] - val_a[e] for e in shared if val_a[e] != val_b[e]}
    steps = sorted(s for s in set(loss_a) & set(loss_b) if epochs is None or loss_a[s][0] < epochs)
    loss_a, loss_b = ({s: v for s, (_, v) in d.items()} for d in (loss_a, loss_b))
    first = next((s for s in steps if loss_a[s] != loss_b[s]), None)
    rel = max((abs(loss_b[s] - loss_a[s]) / abs(loss_a[s]) for s in steps if loss_a[s]), default=0.0)
    return {"epochs": len(shared), "val_equal": len(shared) - len(differ),
            "val_max_diff": max((abs(d) for d in differ.values()), default=0.0),
            "val_differ_at": [e + 1 for e in sorted(differ)], "loss_steps": len(steps),
            "loss_first_differs": first, "loss_max_rel_diff": rel}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--epochs", type=int, default=None, help="compare the first N epochs only")
    args = ap.parse_args()
    r = compare(args.a, args.b, args.epochs)
    print(f"val/f1: equal at {r['val_equal']} of {r['epochs']} epochs; the others (1-based {r['val_differ_at']}) "
          f"differ by at most {r['val_max_diff']:.5f}")
    print(f"train/loss: {r['loss_steps']} logged steps; first differs at step {r['loss_first_differs']}; "
          f"largest relative difference {r['loss_max_rel_diff']:.1e}")
    sys.exit(0)


if __name__ == "__main__":
    main()
