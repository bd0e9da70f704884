"""Paired comparisons in ``ner-zoo compare``: t quantiles, the paired-t CI against a hand-computed example, the
verdicts, and pairing of ordinary ``fit`` records wherever they lie (through the CLI in-process)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ner_zoo.results.stats import (
    Stage,
    bootstrap_differences,
    holm,
    paired_bootstrap,
    paired_ci,
    t_p_value,
    t_quantile,
    verdict,
)
from ner_zoo.run.recorder import encode_sentence_counts

# a 5-seed example worked by hand: differences 1.0, 1.5, 0.5, 1.0, 1.5 points -> mean 1.1, sum of squared
# deviations 0.70 -> std sqrt(0.70 / 4) = 0.41833, standard error 0.18708, t(0.975, 4) = 2.7764451,
# half width 0.51942 -> CI [0.58058, 1.61942]
MODEL = [0.90, 0.91, 0.92, 0.93, 0.94]
BASE = [0.89, 0.895, 0.915, 0.92, 0.925]


@pytest.mark.parametrize("df,expected", [(1, 12.7062047), (2, 4.3026527), (4, 2.7764451), (8, 2.3060041),
                                         (29, 2.0452296), (100, 1.9839715)])
def test_t_quantile_matches_tables(df, expected):
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=1e-6)


def test_paired_ci_hand_computed():
    ci = paired_ci(MODEL, BASE)
    assert ci.n == 5
    assert 100 * ci.mean == pytest.approx(1.1)
    assert 100 * ci.std == pytest.approx(math.sqrt(0.70 / 4))
    assert (100 * ci.low, 100 * ci.high) == pytest.approx((0.58058, 1.61942), abs=1e-5)
    assert math.isnan(paired_ci([0.9], [0.8]).low)


def test_verdicts_say_sign_magnitude_and_stage():
    """Every verdict word on hand-computed CIs: MODEL - BASE is [+0.58058, +1.61942] points (above); the paper
    gains (in F1 fractions, as the CI) are put inside, above and below it, at and before the paper's schedule."""
    ci = paired_ci(MODEL, BASE)  # CI above 0
    at, early = Stage(35.0, 35), Stage(1.0, 35)
    assert verdict(ci, 0.010, 5, at) == "reproduced"  # +1.00 inside [+0.58, +1.62] at 35/35 epochs
    assert verdict(ci, 0.010, 9, at) == "reproduced (too few seeds: 5 < 9)"
    assert verdict(ci, 0.010, 5, early) == "same sign at 1/35 epochs; consistent with the paper's gain"
    assert verdict(ci, 0.020, 5, early) == "same sign at 1/35 epochs; smaller than the paper's"  # +2.00 above
    assert verdict(ci, 0.003, 5, early) == "same sign at 1/35 epochs; larger than the paper's"  # +0.30 below
    assert verdict(ci, 0.020, 5, at) == "same sign at the paper's schedule; smaller than the paper's"
    # CI [-1.62, -0.58] against a +0.50 gain: the sign is opposite
    assert verdict(paired_ci(BASE, MODEL), 0.005, 5, at) == "contradicted; smaller than the paper's"
    assert verdict(paired_ci(BASE, MODEL), 0.005, 5, Stage(3.0, None)) == (
        "opposite sign at 3 epochs (paper: to convergence); smaller than the paper's")
    # differences -1, +2, 0 points: mean 0.333, std 1.5275, t(0.975, 2) = 4.3026527 -> CI [-3.461, +4.128]
    wide = paired_ci([0.90, 0.92, 0.91], [0.91, 0.90, 0.91])
    assert (100 * wide.low, 100 * wide.high) == pytest.approx((-3.4613, 4.1280), abs=1e-3)
    assert verdict(wide, 0.0036, 3, Stage("early stopping", "early stopping")) == (
        "sign unresolved at the paper's schedule; consistent with the paper's gain")
    assert verdict(wide, 0.05, 3, Stage(5.0, "early stopping")) == (
        "sign unresolved at 5 epochs (paper: early stopping); smaller than the paper's")
    assert verdict(ci, 0.010, 5, Stage("early stopping", 35)) == (
        "same sign with early stopping (paper: 35 epochs); consistent with the paper's gain")
    # a fixed budget against a paper trained to convergence: matched only when both arms plateaued there
    assert verdict(ci, 0.010, 5, Stage(35.0, "early stopping", plateaued=True)) == "reproduced"
    assert verdict(ci, 0.020, 5, Stage(35.0, None, plateaued=True)) == (
        "same sign at 35 epochs, both arms plateaued (paper: to convergence); smaller than the paper's")
    assert verdict(ci, 0.010, 5, Stage(35.0, "early stopping", plateaued=False)) == (
        "same sign at 35 epochs (paper: early stopping); consistent with the paper's gain")
    assert Stage(3.0, 35, plateaued=True).words() == "at 3/35 epochs"  # a counted schedule ignores plateaus
    # no paper number: the sign only
    assert (verdict(ci, None, 5), verdict(paired_ci(BASE, MODEL), None, 5), verdict(wide, None, 3)) == (
        "gain", "loss", "inconclusive")
    assert verdict(paired_ci([0.9], [0.8]), 0.01, 5, at) == "inconclusive (too few seeds: 1 < 5)"


def test_p_values_and_holm_hand_computed():
    # df = 2 has a closed form: P(|T| <= t) = t / sqrt(t^2 + 2); t = 0.3333 / (1.5275 / sqrt 3) = 0.37796
    wide = paired_ci([0.90, 0.92, 0.91], [0.91, 0.90, 0.91])
    t = 0.37796447
    assert t_p_value(wide) == pytest.approx(1 - t / math.sqrt(t * t + 2), abs=1e-6)
    assert t_p_value(paired_ci(MODEL, BASE)) == pytest.approx(0.004181, abs=1e-6)  # t = 5.8797, df 4
    assert math.isnan(t_p_value(paired_ci([0.9], [0.8])))
    # sorted 0.01, 0.03, 0.04: 3 x 0.01 = 0.03; 2 x 0.03 = 0.06; 1 x 0.04 = 0.04 -> raised to the running max 0.06
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0]) and holm([]) == []


def _record(folder: Path, model: str, variant: str | None, seed: int, f1: float, epochs: int = 30,
            data: str = "WNUT2017", partial: bool = False, lr: float = 0.01, sentences: list | None = None) -> None:
    """A results.json as ``ner-zoo fit`` writes it in its default layout (one folder per run version)."""
    config = {"seed_everything": seed, "variant": variant,
              "trainer": {"max_epochs": 30, "max_time": "00:00:30:00",
                          "logger": {"init_args": {"name": variant or "min"}}},
              "data": {"class_path": f"ner_zoo.data.{data}", "init_args": {"batch_size": 10}},
              "model": {"class_path": f"ner_zoo.models.{model}", "init_args": {"lr": lr, "use_type": variant is None}}}
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(json.dumps({
        "model": model, "data": data, "seed": seed, "variant": variant, "config": config, "overlays": [],
        "data_split": "standard",
        "protocol": {"epochs": float(epochs), "stopped_by": "max_epochs" if epochs == 30 else "max_time"},
        "epochs": epochs, "partial_test": partial, "test": {"f1": f1},
        **({} if sentences is None else {"test_sentences": {"counts": encode_sentence_counts(sentences)}})}))


def test_compare_pairs_fit_runs_across_folders(tmp_path):
    from ner_zoo.cli.main import main

    runs = tmp_path / "runs"
    for i, (m, b) in enumerate(zip(MODEL, BASE), start=1):  # model and baseline in different trees
        _record(runs / "min" / "wnut2017" / "min" / f"version_{i}", "MIN", None, i, m)
        _record(tmp_path / "later" / f"ner_only-s{i}", "MIN", "ner_only", i, b)
    _record(runs / "x" / "version_9", "MIN", None, 6, 0.99)  # no baseline seed 6: left out, said so
    _record(runs / "y" / "version_7", "MIN", "ner_only", 7, 0.5, epochs=29)
    _record(runs / "y" / "version_8", "MIN", None, 7, 0.9)  # seed 7: 30 vs 29 epochs (time limit), not paired
    _record(runs / "z" / "version_1", "MIN", None, 1, 0.1, lr=0.1)  # another recipe: its own group
    _record(runs / "p" / "version_1", "MIN", "ner_only", 1, 0.0, partial=True)  # partial test: never a row
    out = tmp_path / "results.md"
    assert main(["compare", str(runs), str(tmp_path / "later"), "--output", str(out)]) == 0
    text = out.read_text()
    paired = text.split("## Paired comparisons")[1].split("\n## ")[0].split("**Summary**")[0]
    rows = [line for line in paired.splitlines() if line.startswith("| WNUT2017")]
    assert len(rows) == 1, rows
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert cells[2:7] == ["MIN", "MIN (ner_only)", "", "equal epochs = 30", "5"]
    assert cells[9:13] == ["+1.10 ± 0.42", "[+0.58, +1.62]", "", "+4.82"]  # no sentence counts
    assert cells[13:18] == ["0.004", "0.004", "0.004", "0.004",
                            "same sign at 30 epochs (paper: to convergence); smaller than the paper's"]
    assert "seed 6: only model" in cells[18] and "seed 7: epochs 30 vs 29" in cells[18]
    main_table = text.split("## Paired comparisons")[0]
    assert "| MIN (ner_only) | WNUT2017 |" in main_table and " 0.00 " not in main_table
    partial = text.split("## Partial test evaluations")[1]
    assert str(runs / "p" / "version_1" / "results.json") in partial


def test_a_not_comparable_pair_listed_first_keeps_every_column(tmp_path):
    from ner_zoo.cli.main import main

    for i, (m, b) in enumerate(zip(MODEL, BASE), start=1):
        _record(tmp_path / "w" / f"min-s{i}", "MIN", None, i, m)
        _record(tmp_path / "w" / f"ner_only-s{i}", "MIN", "ner_only", i, b)
    _record(tmp_path / "c" / "min-s1", "MIN", None, 1, 0.9, data="CoNLL2003")  # sorts first: unequal epochs
    _record(tmp_path / "c" / "ner_only-s1", "MIN", "ner_only", 1, 0.9, epochs=29, data="CoNLL2003")
    out = tmp_path / "results.md"
    assert main(["compare", str(tmp_path), "--output", str(out)]) == 0
    section = out.read_text().split("## Paired comparisons")[1].split("\n## ")[0]
    lines = [line for line in section.splitlines() if line.startswith("| ")]  # header, then the rows
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert lines[1].startswith("| CoNLL2003") and "not comparable" in lines[1]
    row = dict(zip(header, (c.strip() for c in lines[2].strip("|").split("|"))))
    assert (row["dataset"], row["95% CI"], row["verdict"]) == (
        "WNUT2017", "[+0.58, +1.62]", "same sign at 30 epochs (paper: to convergence); smaller than the paper's")


def test_interacted_subtasks_on_against_off_is_a_pair_without_a_paper_number(tmp_path):
    from ner_zoo.cli.main import main

    for i, (m, b) in enumerate(zip(MODEL, BASE), start=1):
        _record(tmp_path / f"min-s{i}", "MIN", None, i, m)
        _record(tmp_path / f"off-s{i}", "MIN", "no_interacted_subtasks", i, b)
    out = tmp_path / "results.md"
    assert main(["compare", str(tmp_path), "--output", str(out)]) == 0
    section = out.read_text().split("## Paired comparisons")[1].split("\n## ")[0]
    lines = [line for line in section.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = [dict(zip(header, (c.strip() for c in line.strip("|").split("|")))) for line in lines[1:]]
    assert len(rows) == 1, rows  # the off arm has no NER-only runs here, so only on vs off
    row = rows[0]
    assert (row["model"], row["baseline"], row["95% CI"]) == ("MIN", "MIN (no_interacted_subtasks)", "[+0.58, +1.62]")
    assert row["verdict"] == "gain"  # the paper has no such row: the sign only

# paired bootstrap over test sentences, worked by hand: two sentences, the three resamples (2 x s0, s0 + s1,
# 2 x s1). Pair 1: model s0 (1,0,0), s1 (0,1,1); baseline s0 (0,0,1), s1 (1,0,0). F1 = 2tp / (2tp + fp + fn):
# resample 1: model (2,0,0) 1, baseline (0,0,2) 0 -> +1; resample 2: model (1,1,1) 1/2, baseline (1,0,1) 2/3
# -> -1/6; resample 3: model (0,2,2) 0, baseline (2,0,0) 1 -> -1. Pair 2 has equal arms (difference 0), so
# the mean over the pairs halves them: +1/2, -1/12, -1/2.
BOOT_MODEL = [[(1, 0, 0), (0, 1, 1)], [(1, 0, 0), (1, 0, 0)]]
BOOT_BASE = [[(0, 0, 1), (1, 0, 0)], [(1, 0, 0), (1, 0, 0)]]
WEIGHTS = [[2, 0], [1, 1], [0, 2]]


def test_bootstrap_differences_hand_computed():
    import numpy as np

    diffs = bootstrap_differences(BOOT_MODEL, BOOT_BASE, np.array(WEIGHTS))
    assert diffs.tolist() == pytest.approx([1 / 2, -1 / 12, -1 / 2])
    # 2.5 % and 97.5 % quantiles of (-1/2, -1/12, +1/2), linear between order statistics: positions 0.05, 1.95
    low, high = paired_bootstrap(BOOT_MODEL, BOOT_BASE, weights=np.array(WEIGHTS))
    assert (low, high) == pytest.approx((-1 / 2 + 0.05 * 5 / 12, -1 / 12 + 0.95 * 7 / 12))


def test_bootstrap_random_resamples():
    better = [[(1, 0, 0)] * 20 + [(0, 1, 1)] * 5]  # model right on 20 sentences, wrong on 5
    worse = [[(1, 0, 0)] * 10 + [(0, 1, 1)] * 15]
    low, high = paired_bootstrap(better, worse)
    assert 0 < low < 0.8 - 0.4 < high  # point difference 0.8 - 0.4 inside, 0 outside
    assert paired_bootstrap(better, better) == (0.0, 0.0)
    assert paired_bootstrap(better, worse) == (low, high)  # seeded: the table does not change between runs


def test_compare_shows_the_bootstrap_column(tmp_path):
    from ner_zoo.results.compare import load_records
    from ner_zoo.results.paired import paired_rows

    for i, (m, b) in enumerate(zip(MODEL, BASE), start=1):
        _record(tmp_path / f"min-s{i}", "MIN", None, i, m, sentences=[(1, 0, 0)] * 20 + [(0, 1, 1)] * 5)
        _record(tmp_path / f"ner_only-s{i}", "MIN", "ner_only", i, b, sentences=[(1, 0, 0)] * 10 + [(0, 1, 1)] * 15)
    (row,) = paired_rows(load_records([tmp_path]))
    low, high = paired_bootstrap([[(1, 0, 0)] * 20 + [(0, 1, 1)] * 5] * 5, [[(1, 0, 0)] * 10 + [(0, 1, 1)] * 15] * 5)
    assert row["bootstrap 95% CI"] == f"[{100 * low:+.2f}, {100 * high:+.2f}]" and row["95% CI"] == "[+0.58, +1.62]"
    _record(tmp_path / "ner_only-s5b", "MIN", "ner_only", 5, 0.9, sentences=[(1, 0, 0)] * 3)  # the last by path
    (row,) = paired_rows(load_records([tmp_path]))
    assert row["bootstrap 95% CI"] == ""  # another number of test sentences: no bootstrap


def test_old_records_without_structured_fields_still_pair(tmp_path):
    from ner_zoo.results.compare import is_partial
    from ner_zoo.results.paired import paired_rows

    def old(variant, seed, f1, cmd_extra=""):
        return {"model": "PSA", "data": "CoNLL2000", "seed": seed, "epochs": 12, "test": {"f1": f1},
                "command": "ner-zoo fit --config configs/psa/conll2000.yaml" + cmd_extra
                           + " --config configs/experiments/short_budget_tagger.yaml",
                "config": {"variant": variant, "trainer": {"max_epochs": 12}, "data": {"init_args": {}}}}

    records = [old(None, s, 0.94) for s in (1, 2)] + [old("no_fusion", s, 0.93) for s in (1, 2)]
    (row,) = paired_rows(records)
    assert (row["overlay"], row["protocol"], row["n"], row["paper gain"]) == (
        "short_budget_tagger", "equal epochs = 12", 2, "+0.17")
    assert row["verdict"] == ("same sign at 12 epochs (paper: early stopping); larger than the paper's "
                              "(too few seeds: 2 < 9)")
    limited = old(None, 3, 0.5)
    limited["config"]["trainer"]["limit_test_batches"] = 5
    assert is_partial(limited) and not is_partial(records[0])


def test_paper_number_marked_when_the_split_differs():
    from ner_zoo.results.compare import table_rows

    old = {"model": "LocateAndLabel", "data": "GENIA", "seed": 1, "config": {"a": 1}, "test": {"f1": 0.7}}
    new = {**old, "config": {"a": 2}, "data_split": "finkel_manning"}
    rows = {r["config"]: (r["split"], r["paper"]) for r in table_rows([old, new]) if r["seeds"]}
    assert sorted(rows.values()) == [("finkel_manning", "80.54"), ("yan2022 (paper: finkel_manning)", "80.54")]


def test_readme_paired_rows_come_from_results():
    """The README's paired-comparison rows are copied from the generated docs/results.md, never edited."""
    root = Path(__file__).resolve().parents[1]
    results = (root / "docs" / "results.md").read_text()
    section = (root / "README.md").read_text().split("**Paired comparisons")[1].split("\n## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) >= 2 and all(row in results for row in rows)
    summary = results.split("**Summary** (the Holm family")[1].split("\n\n")[1]
    assert summary.strip() in section  # the short table, whole
    assert "![Forest plot" in section and (root / "docs" / "results_forest.svg").exists()


def test_issue32_arms_pair_with_the_papers_gain_and_holm_covers_the_family(tmp_path):
    """HCR own_slot / document_own_slot against base and MIN at lr 0.001 against NER-only at lr 0.001 are rows
    with the paper's gain (ALL - base, +document - base, MIN - NER-only); Holm adjusts over the paper-gain rows."""
    from ner_zoo.results.compare import load_records
    from ner_zoo.results.paired import paired_markdown, paired_rows

    for i, (m, b) in enumerate(zip(MODEL, BASE), start=1):
        for variant, f1 in (("own_slot", m), ("document_own_slot", m - 0.001), ("base", b)):
            _record(tmp_path / "hcr" / f"{variant}-s{i}", "HCR", variant, i, f1, data="CoNLL2003", epochs=3)
        _record(tmp_path / "min" / f"lr-s{i}", "MIN", "lr0.001", i, b, lr=0.001)
        _record(tmp_path / "min" / f"ner-s{i}", "MIN", "ner_only_lr0.001", i, m, lr=0.001)
    rows = {(r["model"], r["baseline"]): r for r in paired_rows(load_records([tmp_path]))}
    assert set(rows) == {("HCR (own_slot)", "HCR (base)"), ("HCR (document_own_slot)", "HCR (base)"),
                         ("MIN (lr0.001)", "MIN (ner_only_lr0.001)")}
    doc, own, mins = (rows[k] for k in sorted(rows))
    assert (doc["paper gain"], own["paper gain"], mins["paper gain"]) == ("+0.19", "+0.36", "+4.82")
    assert own["verdict"] == "same sign at 3 epochs (paper: to convergence); larger than the paper's"
    assert mins["verdict"].startswith("opposite sign at 30 epochs")
    # own: p 0.004181 (as MODEL - BASE), ranked first of 3 -> 3 x 0.004181 = 0.0125
    assert (own["p"], own["Holm p"]) == ("0.004", "0.013")
    text = paired_markdown(list(rows.values()))
    assert text.count("**Verdict rule.**") == 1 and "`Holm p`: the 3 rows" in text and "_ci" not in text


def test_forest_plot_is_deterministic_and_grouped_by_paper(tmp_path):
    pytest.importorskip("matplotlib")
    from ner_zoo.cli.main import main
    from ner_zoo.results.compare import load_records
    from ner_zoo.results.forest import forest_rows
    from ner_zoo.results.paired import paired_rows

    for i, (m, b) in enumerate(zip(MODEL, BASE), start=1):
        _record(tmp_path / "runs" / f"min-s{i}", "MIN", None, i, m)
        _record(tmp_path / "runs" / f"ner_only-s{i}", "MIN", "ner_only", i, b)
        _record(tmp_path / "runs" / f"hcr-s{i}", "HCR", "all", i, m, data="CoNLL2003")
        _record(tmp_path / "runs" / f"base-s{i}", "HCR", "base", i, b, data="CoNLL2003")
    _record(tmp_path / "runs" / "psa-s1", "PSA", None, 1, 0.9, data="CoNLL2000")  # one pair: no CI, not drawn
    _record(tmp_path / "runs" / "nf-s1", "PSA", "no_fusion", 1, 0.8, data="CoNLL2000")
    rows = paired_rows(load_records([tmp_path / "runs"]))
    assert [r["model"] for r in forest_rows(rows)] == ["HCR (all)", "MIN"] and len(rows) == 3
    svgs = []
    for out in ("a", "b"):
        (tmp_path / out).mkdir()
        assert main(["compare", str(tmp_path / "runs"), "--output", str(tmp_path / out / "results.md")]) == 0
        svgs.append((tmp_path / out / "results_forest.svg").read_bytes())
        assert "![Forest plot" in (tmp_path / out / "results.md").read_text()
    assert svgs[0] == svgs[1] and b"<dc:date>" not in svgs[0] and b"HCR (Luo et al. 2020)" in svgs[0]


@pytest.mark.slow
def test_results_md_and_figure_regenerate_byte_for_byte(tmp_path, monkeypatch):
    """``ner-zoo compare docs/runs --paper-rows --output docs/results.md`` reproduces the committed page and figure (the
    echoed output path aside)."""
    from ner_zoo.cli.main import main

    root = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(root)
    out = tmp_path / "results.md"
    assert main(["compare", "docs/runs", "--paper-rows", "--output", str(out)]) == 0
    text = out.read_text().replace(f"--output {out}", "--output docs/results.md")
    assert text == (root / "docs" / "results.md").read_text()
    for figure in ("results_forest.svg", "results_curves.svg"):
        assert (tmp_path / figure).read_bytes() == (root / "docs" / figure).read_bytes(), figure


def test_recipe_ignores_data_defaults_added_after_older_records():
    """Records written before ``train_on`` existed pair with new records at its default, not with train+dev."""
    from ner_zoo.results.paired import shared_recipe

    def rec(**data):
        return {"config": {"trainer": {"max_epochs": 3}, "data": {"class_path": "X", "init_args": {"batch_size": 8, **data}}}}

    assert shared_recipe(rec()) == shared_recipe(rec(train_on="train"))
    assert shared_recipe(rec()) != shared_recipe(rec(train_on="train+dev"))


def test_a_declared_mixed_protocol_row_pairs_a_fixed_budget_with_an_early_stopped_baseline(tmp_path):
    """A model at 30 epochs against its baseline early-stopped on dev (another overlay and callbacks, a larger
    cap) is a row only as declared; a recipe that differs elsewhere (the learning rate) is not comparable."""
    from ner_zoo.results.compare import load_records
    from ner_zoo.results.paired import paired_rows

    def early_stopped(folder: Path, lr: float = 0.01) -> None:
        path = folder / "results.json"
        rec = json.loads(path.read_text())
        rec["overlays"] = ["early_stop_p10"]
        rec["config"]["trainer"].update(max_epochs=100, callbacks=[{"class_path": "EarlyStopping"}])
        rec["config"]["model"]["init_args"]["lr"] = lr
        rec["protocol"].update(epochs=44.0, stopped_by="early_stopping", early_stopping=True)
        path.write_text(json.dumps(rec))

    for i, (m, b) in enumerate(zip(MODEL, BASE), start=1):
        _record(tmp_path / "fixed" / f"min-s{i}", "MIN", None, i, m)
        _record(tmp_path / "converged" / f"ner-s{i}", "MIN", "ner_only", i, b)
        early_stopped(tmp_path / "converged" / f"ner-s{i}", lr=0.01 if i < 5 else 0.02)
    declared = [{"model": ["MIN", None], "baseline": ["MIN", "ner_only"], "model_records": ["fixed/min-s*"],
                 "baseline_records": ["converged/*"], "ignore": ["max_epochs", "callbacks"],
                 "baseline_overlays": ["early_stop_p10"], "why": "the baseline trained to convergence"}]
    records = load_records([tmp_path])
    assert paired_rows(records, mixed=[]) == []  # never inferred: unequal protocols make no row
    [row] = paired_rows(records, mixed=declared)
    assert row["verdict"] == "not comparable" and "seed 5: recipes differ beyond max_epochs, callbacks" in row[
        "left out"]
    early_stopped(tmp_path / "converged" / "ner-s5")
    [row] = paired_rows(load_records([tmp_path]), mixed=declared)
    assert (row["protocol"], row["n"], row["difference"]) == (
        "model 30 epochs; baseline early stopping on dev", 5, "+1.10 ± 0.42")
    assert row["history"].startswith("mixed protocol: the baseline trained to convergence")
    # no dev curves in these records: the model arm's plateau cannot be shown, so not the paper's stage
    assert row["verdict"] == "same sign at 30 epochs (paper: to convergence); smaller than the paper's"
