"""Print a markdown table of every YAML under ``configs/``: path, model, dataset, what it reproduces and the
paper's number (from ``ner_zoo/results/paper_results.yaml``) for ``docs/configs.md``.

Model and dataset are the short class names of ``model.class_path`` / ``data.class_path``; ablation files
(``<paper>/ablations/*.yaml``) inherit them from ``<paper>/conll2003.yaml`` (or the folder's first config).
The description is the first sentence of the file's leading comment block.

Usage: ``python -m ner_zoo.cli.configs_page [--configs configs] [--output docs/configs.md]``;
``ner-zoo configs`` prints the same rows as a plain list (:func:`plain`).
"""

from __future__ import annotations

import argparse
import re
from functools import lru_cache
from pathlib import Path

import yaml

from ner_zoo.dotted import short_name

CONFIGS = Path(__file__).resolve().parents[1] / "configs"  # packaged (the checkout's configs/ links here)
PAPERS = Path(__file__).resolve().parents[1] / "results" / "paper_results.yaml"
# a sentence ends at ". " unless the period closes an abbreviation common in these headers
SENTENCE_END = re.compile(r"(?<!\bal)(?<!\be\.g)(?<!\bi\.e)(?<!\bSec)(?<!\bcf)(?<!\bvs)(?<!\bEq)(?<!\bFig)(?<!\bTab)\.(\s|$)")


def description(path: Path) -> str:
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        text = line.lstrip("#").strip()
        if text.startswith(("ner-zoo ", "wandb ")):  # usage lines
            break
        lines.append(text)
    text = " ".join(t for t in lines if t)
    text = re.split(r"\s{2,}(?:ner-zoo|wandb) ", text)[0].rstrip(": ")  # an inline usage example
    match = SENTENCE_END.search(text)
    text = text[: match.start() + 1] if match else text
    return text.replace("|", "\\|")


def load(path: Path) -> dict:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def parent_config(path: Path) -> Path | None:
    if path.parent.name != "ablations":
        return None
    folder = path.parent.parent
    parent = folder / "conll2003.yaml"
    return parent if parent.exists() else next(iter(sorted(folder.glob("*.yaml"))), None)


def short(section) -> str:
    if isinstance(section, dict) and section.get("class_path"):
        return short_name(section)
    return ""


@lru_cache(maxsize=1)
def paper_rows() -> list[dict]:
    return yaml.safe_load(PAPERS.read_text())  # read once per table (it was once per config: seconds)


def paper_number(model: str, data: str, variant: str | None) -> str:
    for row in paper_rows():
        if row["model"] == model and row["data"] == data and row.get("variant") == variant:
            std = f" ± {row['std']:.2f}" if row.get("std") is not None else ""
            return f"{row['value']:.2f}{std}"
    return ""


def rows(configs: Path) -> list[dict]:
    out = []
    paths = sorted(configs.rglob("*.yaml"), key=lambda p: (p.parent.parent if p.parent.name == "ablations"
                                                               else p.parent, p.parent.name == "ablations", p))
    for path in paths:
        cfg = load(path)
        parent = parent_config(path)
        base = load(parent) if parent else {}
        model = short(cfg.get("model")) or short(base.get("model"))
        data = short(cfg.get("data")) or short(base.get("data"))
        # an ablation has a paper row only when it names its variant (else its header gives the number)
        variant = cfg.get("variant")
        known = bool(model and data) and (not parent or variant is not None)
        rel = path.relative_to(configs.parent)
        if parent:
            usage = f"`{parent.relative_to(configs.parent)}` + `{rel}`"
        else:
            usage = f"`{rel}`"
        out.append({"config": usage, "model": model or "—", "dataset": data or "—",
                    "reproduces": description(path),
                    "paper": paper_number(model, data, variant) if known else ""})
    return out


def to_markdown(table: list[dict]) -> str:
    cols = ["config", "model", "dataset", "reproduces", "paper"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in table]
    return "\n".join(lines)


def plain(configs: Path = CONFIGS) -> str:
    """Every config as ``ner-zoo fit --config`` names it, with its model, dataset and the paper's number."""
    table = rows(configs)
    names = [r["config"].split("` + `")[-1].strip("`").removeprefix("configs/").removesuffix(".yaml")
             for r in table]
    width = max(map(len, names), default=0)
    model_w = max((len(r["model"]) for r in table), default=0)
    data_w = max((len(r["dataset"]) for r in table), default=0)
    head = f"{'config':<{width}}  {'model':<{model_w}}  {'dataset':<{data_w}}  paper"
    lines = [head] + [f"{n:<{width}}  {r['model']:<{model_w}}  {r['dataset']:<{data_w}}  {r['paper']}".rstrip()
                      for n, r in zip(names, table)]
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--configs", type=Path, default=CONFIGS)
    p.add_argument("--output", type=Path, help="replace the table in this markdown file (docs/configs.md)")
    a = p.parse_args(argv)
    if a.output is None:
        print(to_markdown(rows(a.configs.resolve())))
        return
    text = page(a.output, a.configs.resolve())
    from ner_zoo.io import atomic_write

    with atomic_write(a.output, overwrite=True) as f:  # replacing the table in this page is what --output asks for
        f.write(text)


def page(path: Path, configs: Path = CONFIGS) -> str:
    """The markdown page ``path`` with its config table regenerated (``tests/test_configs_page.py`` checks
    that ``docs/configs.md`` equals it)."""
    text = path.read_text(encoding="utf-8")
    start = text.index("| config | model |")  # the page's text above the table is kept
    return text[:start] + to_markdown(rows(configs)) + "\n"


if __name__ == "__main__":
    main()
