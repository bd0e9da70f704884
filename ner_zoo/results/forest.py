"""The forest plot of ``ner-zoo compare``: each paired row's mean difference with its paired-t 95 % CI (over
seeds), beside the paper's gain, one line per row, grouped by paper (matplotlib, SVG).

The SVG is deterministic (fixed ``svg.hashsalt``, no date or creator in its metadata), so regenerating it from
the same records gives the same bytes.
"""

from __future__ import annotations

import math
from pathlib import Path

#: paper of each model family, in the figure's order
PAPERS = {"HCR": "HCR (Luo et al. 2020)", "MIN": "MIN (Li et al. 2021)", "PSA": "PSA (Wei et al. 2021)",
          "DSpERT": "DSpERT (Zhu et al. 2023)", "LocateAndLabel": "Locate-and-Label (Shen et al. 2021)"}


def forest_rows(rows: list[dict]) -> list[dict]:
    """The rows a forest plot shows: those with a CI (two or more seed pairs), grouped by paper in
    :data:`PAPERS` order (the table's order inside a group)."""
    shown = [r for r in rows if r.get("_ci") is not None and not math.isnan(r["_ci"].low)]
    family = lambda r: r["model"].split(" ")[0]  # noqa: E731
    order = {name: i for i, name in enumerate(PAPERS)}
    return sorted(shown, key=lambda r: order.get(family(r), len(order)))


def _label(row: dict) -> str:
    baseline = row["baseline"].split(" ", 1)[1] if row["baseline"].startswith(row["model"].split(" ")[0] + " ") \
        else row["baseline"]
    return f"{row['dataset']}: {row['model']} − {baseline}, {row['protocol'].replace('equal epochs = ', 'ep ')}, n={row['n']}"


def draw_forest(rows: list[dict], path: Path, overwrite: bool = False) -> bool:
    """Draw the forest plot of ``rows`` (:func:`paired_rows`) to ``path`` (SVG); False when no row has a CI."""
    shown = forest_rows(rows)
    if not shown:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ner_zoo.results.svg import save_svg, svg_style

    with matplotlib.rc_context(svg_style("ner-zoo-forest")):
        fig, ax = plt.subplots(figsize=(9, 0.28 * len(shown) + 0.9 * len(PAPERS) + 1))
        y, ticks, labels, last = 0.0, [], [], None
        for row in shown:
            paper = PAPERS.get(row["model"].split(" ")[0], row["model"])
            if paper != last:  # a group heading above each paper's rows
                y -= 0.6 if last is not None else 0
                ax.text(0.0, y, paper, transform=ax.get_yaxis_transform(), ha="left", va="center",
                        fontweight="bold")
                y -= 1
                last = paper
            ci = row["_ci"]
            ax.plot([100 * ci.low, 100 * ci.high], [y, y], color="black", lw=1.2)
            ax.plot([100 * ci.mean], [y], "o", color="black", ms=4)
            if row.get("_gain") is not None:
                ax.plot([row["_gain"]], [y], "D", color="tab:red", ms=5, mfc="none")
            ticks.append(y)
            labels.append(_label(row))
            y -= 1
        ax.axvline(0, color="grey", lw=0.8, ls="--")
        ax.set_yticks(ticks, labels)
        ax.set_ylim(y + 0.4, 1)
        ax.set_xlabel("test F1 difference, model − baseline (points)\n"
                      "● our mean, line: its 95 % paired-t CI over seeds;  ◇ the paper's gain")
        ax.grid(axis="x", color="0.9")
        fig.tight_layout()
        save_svg(fig, path, overwrite)
        plt.close(fig)
    return True
