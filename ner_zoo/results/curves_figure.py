"""The training-curves figure of ``ner-zoo compare``: one panel per paired comparison
(:func:`~ner_zoo.results.curves.curve_rows`), dev score per epoch of both arms, every seed a thin line and the mean
over seeds bold, each run's best-dev (tested) epoch a dot, the epoch budget a dashed line and the window of the
plateau check shaded (matplotlib, SVG, deterministic: :mod:`~ner_zoo.results.svg`)."""

from __future__ import annotations

import math
from pathlib import Path

from ner_zoo.results.curves import PLATEAU_EPOCHS, drawable

COLUMNS = 3
COLOURS = {"model": "tab:blue", "baseline": "tab:orange"}


def _mean(curves: list[list[float]]) -> list[float]:
    """Mean over seeds at each epoch that every seed reached."""
    length = min(len(c) for c in curves)
    return [sum(c[e] for c in curves) / len(curves) for e in range(length)]


def _panel(ax, row: dict) -> None:
    values = []
    budget = max(len(c) for side in ("model", "baseline") for _, c, _ in row["_arms"][side])
    if budget > PLATEAU_EPOCHS:  # the epochs that the plateau check reads
        ax.axvspan(budget - PLATEAU_EPOCHS + 0.5, budget + 0.5, color="0.93", lw=0)
    ax.axvline(budget, color="grey", lw=0.8, ls="--")
    for side in ("model", "baseline"):
        runs = row["_arms"][side]
        for _, curve, best in runs:
            epochs = range(1, len(curve) + 1)
            ax.plot(epochs, [100 * v for v in curve], color=COLOURS[side], lw=0.6, alpha=0.45)
            ax.plot([best], [100 * curve[best - 1]], "o", color=COLOURS[side], ms=2.5, alpha=0.8)
            values += curve[len(curve) // 4:]  # the axis shows where the curves end, not the first epochs
        mean = _mean([c for _, c, _ in runs])
        ax.plot(range(1, len(mean) + 1), [100 * v for v in mean], color=COLOURS[side], lw=1.8,
                label=f"{row[side]} ({row[side + ' last-' + str(PLATEAU_EPOCHS)]})")
    low, high = 100 * min(values), 100 * max(values)
    pad = max(0.1, 0.08 * (high - low))
    ax.set_ylim(low - pad, high + pad)
    ax.set_xlim(0.5, budget + 0.5)
    ax.set_title(f"{row['dataset']}{', ' + row['overlay'] if row['overlay'] else ''}: "
                 f"{row['model']} vs {row['baseline']}, n={row['n']}\nboth plateaued: {row['both plateaued']}",
                 fontsize=7)
    ax.set_xlabel("epoch")
    ax.set_ylabel("dev score (%)")
    ax.grid(color="0.9", lw=0.5)
    ax.legend(fontsize=6, loc="lower right")


def draw_curves(rows: list[dict], path: Path, overwrite: bool = False) -> bool:
    """Draw the panels of the :func:`~ner_zoo.results.curves.drawable` rows to ``path`` (SVG); False when there
    is none."""
    shown = [r for r in rows if drawable(r)]
    if not shown:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ner_zoo.results.svg import save_svg, svg_style

    with matplotlib.rc_context(svg_style("ner-zoo-curves")):
        lines = math.ceil(len(shown) / COLUMNS)
        fig, axes = plt.subplots(lines, COLUMNS, figsize=(3.6 * COLUMNS, 2.8 * lines), squeeze=False)
        for ax, row in zip(axes.flat, shown):
            _panel(ax, row)
        for ax in list(axes.flat)[len(shown):]:
            ax.set_visible(False)
        fig.tight_layout()
        save_svg(fig, path, overwrite)
        plt.close(fig)
    return True
