"""Training curves of the paired comparisons (``ner_zoo/results/curves.py``): dev scores per epoch read from
hand-made ``metrics.csv`` files, the plateau check on hand-computed examples (plateaued, rising, too short, no
curve), and the section and figure that ``ner-zoo compare`` writes beside its report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ner_zoo.results.curves import PLATEAU_EPOCHS, PLATEAU_POINTS, Plateau, dev_curve, plateau

# epoch -> dev F1; best before the last 5 epochs 0.930 (epoch 4), best in them 0.9305: +0.05 points
FLAT = [0.90, 0.92, 0.925, 0.930, 0.929, 0.9305, 0.928, 0.930, 0.929]
# still climbing: best before the last 5 is 0.91 (epoch 4), best in them 0.93: +2.00 points
RISING = [0.85, 0.88, 0.90, 0.91, 0.915, 0.92, 0.925, 0.928, 0.93]
# peaked early and fell: best in the last 5 (0.92) is 1 point below the best before (0.93)
PEAKED = [0.90, 0.93, 0.925, 0.92, 0.91, 0.92, 0.915, 0.91, 0.91]


def _metrics(path: Path, curve: list[float], key: str = "val/f1", test: float | None = 0.9, first: int = 0) -> None:
    """A metrics.csv as Lightning's CSVLogger writes it: train rows, one dev row per epoch from ``first`` (a
    resumed run's log), a test row."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"epoch,step,train/loss,{key},test/f1"]
    for epoch, value in enumerate(curve, start=first):
        lines += [f"{epoch},{10 * epoch + 4},1.5,,", f"{epoch},{10 * epoch + 9},,{value},"]
    if test is not None:
        lines.append(f"{len(curve) - 1},{10 * len(curve)},,,{test}")
    path.write_text("\n".join(lines) + "\n")


def test_plateau_rule_hand_computed():
    flat = plateau([FLAT, FLAT])
    assert flat.status == "plateaued" and flat.gain == pytest.approx(0.05) and flat.epochs == 9
    rising = plateau([RISING, FLAT])  # mean of +2.00 and +0.05
    assert rising.status == "rising" and rising.gain == pytest.approx(1.025)
    assert plateau([PEAKED]).gain == pytest.approx(-1.0) and plateau([PEAKED]).ok
    assert plateau([FLAT[:5], FLAT]) == Plateau("too short (5 < 6 epochs)", None, 5)
    assert plateau([FLAT, None]) == Plateau("no curve") and plateau([]) == Plateau("no curve")
    # just under and just over the threshold (0.1 points)
    assert plateau([[0.90] + [0.91] * 5 + [0.9109]]).ok and not plateau([[0.90] + [0.91] * 5 + [0.9111]]).ok
    assert PLATEAU_EPOCHS == 5 and PLATEAU_POINTS == 0.1
    assert plateau([RISING], k=2, threshold=0.6).gain == pytest.approx(0.5)  # 0.93 against 0.925
    assert plateau([RISING], k=2, threshold=0.6).ok and not plateau([RISING], k=2, threshold=0.5).ok


def test_dev_curve_reads_metrics_csv(tmp_path):
    rec = {"_path": str(tmp_path / "a" / "results.json")}
    assert dev_curve(rec) is None  # no metrics.csv
    _metrics(tmp_path / "a" / "metrics.csv", FLAT)
    assert dev_curve(rec) == FLAT
    # the CSVLogger's own layout (tools/run_matrix.py): a resumed run's later version replaces the epochs it repeats
    _metrics(tmp_path / "b" / "csv" / "version_0" / "metrics.csv", RISING[:4], test=None)
    _metrics(tmp_path / "b" / "csv" / "version_2" / "metrics.csv", [0.99, 0.98, 0.5], test=None, first=3)
    _metrics(tmp_path / "b" / "csv" / "version_10" / "metrics.csv", [0.97], first=5)  # version 10 after 2
    assert dev_curve({"_path": str(tmp_path / "b" / "results.json")}) == [*RISING[:3], 0.99, 0.98, 0.97]
    # a variant's run: the CLI names its CSV logger after the variant (``csv-no_fusion``); it read "no curve"
    _metrics(tmp_path / "v" / "csv-no_fusion" / "version_0" / "metrics.csv", RISING)
    assert dev_curve({"_path": str(tmp_path / "v" / "results.json")}) == RISING
    # the checkpoint's monitor names the dev metric
    _metrics(tmp_path / "c" / "metrics.csv", RISING, key="val/accuracy")
    assert dev_curve({"_path": str(tmp_path / "c" / "results.json")}) is None
    rec_c = {"_path": str(tmp_path / "c" / "results.json"), "config": {"checkpoint": {"monitor": "val/accuracy"}}}
    assert dev_curve(rec_c) == RISING
    # an epoch without a dev row is a gap, never filled in
    text = (tmp_path / "a" / "metrics.csv").read_text().replace("\n2,29,,0.925,\n", "\n")
    (tmp_path / "a" / "metrics.csv").write_text(text)
    assert dev_curve(rec) is None


def _run(folder: Path, model: str, variant: str | None, seed: int, f1: float, curve: list[float] | None) -> None:
    """A run record of ``len(curve)`` equal epochs (9 without a curve) and its metrics.csv."""
    epochs = len(curve) if curve else 9
    config = {"seed_everything": seed, "variant": variant, "trainer": {"max_epochs": epochs},
              "data": {"class_path": "ner_zoo.data.CoNLL2000", "init_args": {"batch_size": 10}},
              "model": {"class_path": f"ner_zoo.models.{model}", "init_args": {"lr": 0.015}}}
    folder.mkdir(parents=True)
    best = None if curve is None else curve.index(max(curve))
    (folder / "results.json").write_text(json.dumps({
        "model": model, "data": "CoNLL2000", "seed": seed, "variant": variant, "config": config, "overlays": [],
        "data_split": "standard", "protocol": {"epochs": float(epochs), "stopped_by": "max_epochs"},
        "epochs": epochs, "best_epoch": best, "partial_test": False, "test": {"f1": f1}}))
    if curve is not None:
        _metrics(folder / "metrics.csv", curve)


def test_compare_writes_the_plateau_table_and_the_curves_figure(tmp_path):
    """Two pairs (PSA vs no_fusion at 9 epochs, plateaued; MIN vs NER-only, the baseline still rising) and a third
    whose baseline has no metrics.csv: the table says which, and only drawable pairs are drawn, the same bytes
    each time."""
    pytest.importorskip("matplotlib")
    from ner_zoo.cli.main import main

    runs = tmp_path / "runs"
    for seed in (1, 2, 3):
        _run(runs / f"psa-s{seed}", "PSA", None, seed, 0.94, FLAT)
        _run(runs / f"nf-s{seed}", "PSA", "no_fusion", seed, 0.93, PEAKED)
        _run(runs / "min" / f"min-s{seed}", "MIN", None, seed, 0.5, FLAT)
        _run(runs / "min" / f"ner-s{seed}", "MIN", "ner_only", seed, 0.4, RISING)
        _run(runs / "hcr" / f"all-s{seed}", "HCR", "all", seed, 0.9, FLAT)
        _run(runs / "hcr" / f"base-s{seed}", "HCR", "base", seed, 0.9, None)
    svgs = []
    for out in ("a", "b"):
        (tmp_path / out).mkdir()
        assert main(["compare", str(runs), "--output", str(tmp_path / out / "results.md")]) == 0
        svgs.append((tmp_path / out / "results_curves.svg").read_bytes())
    assert svgs[0] == svgs[1] and b"<dc:date>" not in svgs[0]
    assert b"PSA vs PSA (no_fusion)" in svgs[0] and b"MIN vs MIN (ner_only)" in svgs[0]
    assert b"HCR (all) vs" not in svgs[0]  # a run without a curve is not drawn
    text = (tmp_path / "a" / "results.md").read_text()
    section = text.split("## Training curves of the paired comparisons")[1].split("\n## ")[0]
    assert section.count("**Plateau rule.**") == 1 and "![Dev score per epoch" in section
    rows = {line.split(" | ")[1]: line.split(" | ") for line in section.splitlines() if line.startswith("| CoNLL")}
    cols = section.split("\n| dataset")[1].splitlines()[0].split(" | ")
    cell = {model: dict(zip(["dataset", *cols[1:]], row)) for model, row in rows.items()}
    assert (cell["PSA"]["model last-5"], cell["PSA"]["baseline last-5"], cell["PSA"]["both plateaued"]) == (
        "plateaued (+0.05)", "plateaued (-1.00)", "yes")
    assert (cell["MIN"]["baseline last-5"], cell["MIN"]["both plateaued"]) == ("rising (+2.00)", "no")
    assert (cell["HCR (all)"]["baseline last-5"], cell["HCR (all)"]["both plateaued"]) == ("no curve", "no curve")
    # best-dev epochs, 1-based: FLAT peaks at epoch 6, PEAKED at epoch 2
    assert (cell["PSA"]["best-dev epoch (model)"], cell["PSA"]["best-dev epoch (baseline)"]) == ("6", "2")


def test_psa_conll2000_matrix_logs_curves_tests_best_dev_and_never_pairs_with_the_5_epoch_records():
    """The converged PSA pair (issue 32, item 5): both arms at one fixed epoch budget, each run logging dev F1 per
    epoch (CSVLogger) and testing its best-dev checkpoint; its records cannot pair with the published 5-epoch
    records of the same recipe (another trainer config), and its run names differ from theirs."""
    import sys

    import yaml
    from test_configs import parse

    from ner_zoo.results.paired import shared_recipe

    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "tools"))
    try:
        from run_matrix import commands
    finally:
        sys.path.remove(str(root / "tools"))
    matrix = yaml.safe_load((root / "configs" / "experiments" / "repro_psa_conll2000.yaml").read_text())
    budgets, recipes = set(), set()
    for name, cmd in commands(matrix, Path("out"), None, ["--trainer.accelerator", "cpu"]):
        assert "--test_after_fit" in cmd and cmd[cmd.index("--test_after_fit") + 1] == "true", name
        logger = json.loads(cmd[cmd.index("--trainer.logger") + 1])
        assert logger["class_path"] == "lightning.pytorch.loggers.CSVLogger", name
        budgets.add(cmd[len(cmd) - 1 - cmd[::-1].index("--trainer.max_epochs") + 1])
    assert len(budgets) == 1 and int(budgets.pop()) > 15
    for run in matrix:
        config = parse([root / c for c in run["configs"]], [*run["args"], "--trainer.accelerator", "cpu"])
        assert config["checkpoint"]["monitor"] == "val/f1" and config["checkpoint"]["mode"] == "max"
        recipes.add(shared_recipe({"config": config}))
    assert len(recipes) == 1
    published = root / "docs" / "runs" / "cpu-2026-11-26-psa-repro"
    old = [json.loads(f.read_text()) for f in published.glob("*/results.json")]
    assert old and all(r["protocol"]["epochs"] == 5 for r in old if r["data"] == "CoNLL2000")
    assert recipes.isdisjoint(shared_recipe(r) for r in old)
    own = root / "docs" / "runs" / "cpu-2026-11-28-psa-conll2000-e50"  # where this matrix's runs are published
    published = {p.name.rsplit("-s", 1)[0] for p in (root / "docs" / "runs").glob("*/*-s[0-9]*") if p.parent != own}
    assert not published & {run["name"] for run in matrix}
    assert {p.name.rsplit("-s", 1)[0] for p in own.glob("*-s[0-9]*")} == {run["name"] for run in matrix}
