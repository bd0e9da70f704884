"""The settings that make ``ner-zoo compare``'s SVG figures deterministic: a fixed hash salt for the element ids,
text kept as text, and no date or creator in the metadata, so the same records give the same bytes."""

from __future__ import annotations

from pathlib import Path


def svg_style(salt: str) -> dict:
    """The ``matplotlib.rc_context`` of a figure; ``salt`` (one per figure) seeds its element ids."""
    return {"svg.hashsalt": salt, "svg.fonttype": "none", "font.size": 8}


def save_svg(fig, path: Path, overwrite: bool = False) -> None:
    """Write ``fig`` to ``path`` as SVG, atomically (never half a figure), without date or creator."""
    from ner_zoo.io import atomic_write

    with atomic_write(path, overwrite=overwrite) as f:
        fig.savefig(f, format="svg", metadata={"Date": None, "Creator": None})
