"""The "Paired comparisons" table of ``ner-zoo compare``: each paper model against its own baseline (the paper's
ablation row), paired by seed, with a paired-t 95 % confidence interval and a verdict.

Two runs are the two arms of one comparison when they share the data and its split, the recipe overlays and
the training recipe (``trainer`` and ``data`` sections of the config without run-specific keys such as seed,
paths and ``max_time``, and the model's optimiser arguments), wherever their ``results.json`` lie. Seed
``s`` of the model is paired with seed ``s`` of the baseline when both trained the same number of epochs
(``protocol.epochs``; for older records the steps in their ``metrics.csv``, so a partial last epoch never
counts as complete) or both stopped early on dev; other seeds are listed in ``left out``, never dropped silently.

The verdict states sign, magnitude against the paper's gain and stage against the paper's schedule
(:data:`~ner_zoo.results.stats.VERDICT_RULE`); ``p`` and ``Holm p`` test the mean difference against 0, Holm over
the rows that test a paper gain with the protocol's seeds. ``PAIRS`` declares the pairs.

The second interval, ``bootstrap 95% CI``, resamples the test sentences (1000 resamples, the same sentences for
both arms and every seed): the uncertainty due to the finite test set, where the paired t interval measures
the seeds'. It needs every paired record's per-sentence counts (``test_sentences``), over the same number of
sentences; it is empty otherwise.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

from ner_zoo.results.cells import (
    data_split,
    is_partial,
    paper_results,
    read_yaml,
    split_cell,
    test_size_note,
    trained_epochs,
)
from ner_zoo.results.cells import fmt as _fmt
from ner_zoo.results.cells import label as _label
from ner_zoo.results.cells import markdown_table as _markdown_table
from ner_zoo.results.cells import overlays as _overlays
from ner_zoo.results.cells import score as _score
from ner_zoo.results.cells import section as _section
from ner_zoo.results.cells import variant as _variant
from ner_zoo.results.curves import dev_curve, plateau
from ner_zoo.results.fields import config_hash, decode_sentence_counts
from ner_zoo.results.history import row_history
from ner_zoo.results.stats import VERDICT_RULE, Stage, holm, paired_bootstrap, paired_ci, t_p_value, verdict

#: (model, variant) -> its baselines, as the papers compare them (ablation rows and same-encoder baselines); a
#: third item names the paper rows whose difference is the paper's gain when they are not the arms' own (arms
#: that run the paper's model under another variant name)
PAIRS: list[tuple] = [
    (("HCR", "all"), ("HCR", "base")), (("HCR", "sentence"), ("HCR", "base")), (("HCR", "document"), ("HCR", "base")),
    (("HCR", "released_bug"), ("HCR", "base")), (("HCR", "all"), ("HCR", "released_bug")),
    # the paper's memory reading (training tokens read their own slot): the paper's ALL and +document rows
    (("HCR", "own_slot"), ("HCR", "base"), (("HCR", "all"), ("HCR", "base"))),
    (("HCR", "document_own_slot"), ("HCR", "base"), (("HCR", "document"), ("HCR", "base"))),
    (("MIN", None), ("MIN", "ner_only")), (("MIN", "no_interaction"), ("MIN", "ner_only")),
    (("MIN", "no_interacted_subtasks"), ("MIN", "ner_only")), (("MIN", None), ("MIN", "no_interacted_subtasks")),
    # both arms at the learning rate tuned for NER-only on dev (Adam 0.001): the paper's MIN - NER-only gain
    (("MIN", "lr0.001"), ("MIN", "ner_only_lr0.001"), (("MIN", None), ("MIN", "ner_only"))),
    (("PSA", None), ("PSA", "no_fusion")),
    (("DSpERT", None), ("DSpERT", "shallow")), (("DSpERT", None), ("BiaffineNER", None)),
    (("LocateAndLabel", None), ("LocateAndLabel", "no_regressor")),
    (("LocateAndLabel", None), ("ExhaustiveSpanClassifier", "lnl_encoder")),
]
#: rows replaced by a later measurement of the same gain: marked, and kept out of the Holm families
SUPERSEDED = Path(__file__).parent / "superseded.yaml"
#: rows whose arms trained under different stopping rules on purpose (a model at a fixed budget against its
#: baseline trained to convergence): declared, never inferred
MIXED = Path(__file__).parent / "mixed_protocol.yaml"

#: fewest seeds per arm for a verdict; more where the paper's gain is small against its std (PSA)
MIN_SEEDS = {"PSA": 9}
DEFAULT_MIN_SEEDS = 5


#: model arguments that belong to the training recipe, not to the architecture, where a model has them
RECIPE_ARGS = ("optimizer", "lr_scheduler", "lr", "pretrained_lr", "weight_decay", "loss_reduction")


def _without_none(d):
    """The config without null values (records leave them out; a ``config.yaml`` keeps them)."""
    if isinstance(d, dict):
        return {k: _without_none(v) for k, v in d.items() if v is not None}
    return [_without_none(v) for v in d] if isinstance(d, list) else d


#: data arguments added after records were written, at the value that older records (which lack them) ran with
LATER_DATA_DEFAULTS = {"train_on": "train"}


def shared_recipe(rec: dict, ignore: tuple[str, ...] = ()) -> str:
    """Hash of what both arms of a comparison must share: the trainer and data sections of the config and the
    model's optimisation arguments (:data:`RECIPE_ARGS`); ``ignore``: trainer keys left out (a mixed-protocol
    row's declared differences)."""
    config = _without_none(rec.get("config") or {})
    if ignore:
        config["trainer"] = {k: v for k, v in (config.get("trainer") or {}).items() if k not in ignore}
    data_args = (config.get("data") or {}).get("init_args") or {}
    for key, default in LATER_DATA_DEFAULTS.items():
        if data_args.get(key) == default:
            del data_args[key]
    init = (config.get("model") or {}).get("init_args") or {}
    return config_hash({"trainer": config.get("trainer"), "data": config.get("data"),
                        "optim": {k: init[k] for k in RECIPE_ARGS if k in init}})


def _epochs(rec: dict) -> float | str | None:
    protocol = rec.get("protocol") or {}
    if protocol.get("stopped_by") == "early_stopping":
        return "early stopping"
    return trained_epochs(rec)


def _arms(records: list[dict]) -> dict[tuple, dict[tuple, dict]]:
    """(data, split, overlays, shared recipe) -> (model, variant) -> seed -> records of that seed."""
    groups: dict[tuple, dict] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for r in sorted((r for r in records if not is_partial(r)), key=lambda r: r.get("_path", "")):
        key = (r["data"], data_split(r), _overlays(r), shared_recipe(r))
        groups[key][(r["model"], _variant(r))][r.get("seed")].append(r)
    return groups


def bootstrap_cell(pairs: list[tuple[dict, dict]]) -> str:
    """The ``bootstrap 95% CI`` cell of a row (points), or "" when a record lacks per-sentence counts."""
    texts = [(r.get("test_sentences") or {}).get("counts") for pair in pairs for r in pair]
    if any(not isinstance(t, str) for t in texts):
        return ""
    counts = [decode_sentence_counts(t) for t in texts]
    if len({len(c) for c in counts}) != 1:
        return ""
    low, high = paired_bootstrap(counts[0::2], counts[1::2])
    return f"[{100 * low:+.2f}, {100 * high:+.2f}]"


def _protocol(epochs: list) -> str:
    values = sorted({str(e if not isinstance(e, float) or not e.is_integer() else int(e)) for e in epochs})
    if values == ["early stopping"]:
        return "early stopping on dev (both arms)"
    return f"equal epochs = {'/'.join(values)}"


def _arm_protocol(epochs: list) -> str:
    """One arm's protocol, for a mixed-protocol row: "50 epochs", "early stopping on dev"."""
    words = _protocol(epochs)
    return f"{words.removeprefix('equal epochs = ')} epochs" if words.startswith("equal") else \
        words.removesuffix(" (both arms)")


def _schedule(paper: dict | None) -> int | str | None:
    return None if paper is None else paper.get("epochs")


def _stage(epochs: list, paper: dict | None, curves: list[tuple[list | None, list | None]]) -> Stage:
    """The stage of a row; a fixed budget against a paper that trained to convergence is checked for a plateau
    of both arms' dev curves (``curves``: per pair, :func:`~ner_zoo.results.curves.dev_curve` of each arm)."""
    values = {e for e in epochs}
    ours = values.pop() if len(values) == 1 else None
    stage = Stage(ours, _schedule(paper))
    if stage.to_convergence and isinstance(ours, (int, float)):
        plateaued = all(plateau([pair[i] for pair in curves]).ok for i in (0, 1))
        stage = Stage(ours, stage.paper, plateaued)
    return stage


def paired_rows(records: list[dict], min_seeds: int = DEFAULT_MIN_SEEDS,
                mixed: list[dict] | None = None) -> list[dict]:
    """The paired rows: each :data:`PAIRS` pair within a group of one recipe, then the declared mixed-protocol
    rows (:data:`MIXED`); superseded rows marked and the Holm columns filled."""
    rows = []
    for (data, split, overlay, recipe), arms in sorted(_arms(records).items(), key=lambda kv: str(kv[0])):
        for m, base, *as_paper in PAIRS:
            if m not in arms or base not in arms:
                continue
            pairs, left = _pair_by_seed(arms[m], arms[base], equal_epochs=True)
            if not pairs:  # both arms ran, but never under the same protocol: say so rather than hide it
                if any("epochs" in why for why in left):
                    rows.append(_not_comparable(data, split, m, base, overlay, recipe, "unequal epochs", left))
                continue
            epochs = [_epochs(a) for a, _ in pairs]
            rows.append(_row(data, split, overlay, recipe, m, base, as_paper[0] if as_paper else None, pairs, left,
                             _protocol(epochs), lambda pm, curves: _stage(epochs, pm, curves), min_seeds))
    rows += mixed_rows(records, min_seeds, mixed)
    mark_superseded(rows)
    holm_columns(rows)
    return rows


def _pair_by_seed(model: dict, baseline: dict, equal_epochs: bool) -> tuple[list[tuple[dict, dict]], list[str]]:
    """(model record, baseline record) per seed of both arms (seed -> records, the last by path taken), and the
    seeds left out, with why; ``equal_epochs``: a seed pairs only where both arms trained the same epochs."""
    left, pairs = [], []
    for seed in sorted(set(model) | set(baseline), key=str):
        a, b = model.get(seed), baseline.get(seed)
        if not a or not b:
            left.append(f"seed {seed}: only {'model' if a else 'baseline'}")
            continue
        if len(a) > 1 or len(b) > 1:
            left.append(f"seed {seed}: {len(a) + len(b) - 2} older duplicate run(s)")
        a, b = a[-1], b[-1]
        if equal_epochs and _epochs(a) != _epochs(b):
            left.append(f"seed {seed}: epochs {_epochs(a)} vs {_epochs(b)}")
            continue
        pairs.append((a, b))
    return pairs, left


def _paper(model: str, variant: str | None, data: str) -> dict | None:
    return next((p for p in paper_results() if (p["model"], p.get("variant"), p["data"]) == (model, variant, data)),
                None)


def _not_comparable(data, split, m, base, overlay, recipe, protocol: str, left: list[str]) -> dict:
    return {"dataset": data, "split": split, "model": _label(*m), "baseline": _label(*base), "overlay": overlay,
            "protocol": protocol, "n": 0, "model score": "", "baseline score": "", "difference": "", "95% CI": "",
            "bootstrap 95% CI": "", "paper gain": "", "p": "", "Holm p": "", "Holm p (paper)": "",
            "Holm p (gains)": "", "verdict": "not comparable", "left out": "; ".join(left), "history": "",
            "recipe": recipe}


def _row(data, split, overlay, recipe, m, base, as_paper, pairs, left, protocol: str, stage, min_seeds) -> dict:
    """One paired row from its (model record, baseline record) pairs; ``stage(paper row, curves)`` is its
    :class:`Stage`."""
    paper_m, paper_b = as_paper or (m, base)
    ci = paired_ci([_score(a) for a, _ in pairs], [_score(b) for _, b in pairs])
    pm, pb = _paper(*paper_m, data), _paper(*paper_b, data)
    gain = None if pm is None or pb is None else pm["value"] - pb["value"]
    need = MIN_SEEDS.get(m[0], min_seeds)
    curves = [(dev_curve(a), dev_curve(b)) for a, b in pairs]
    p = t_p_value(ci)
    return {
        "dataset": data, "split": split_cell(split, (pm, pb)) + test_size_note(pairs, (pm, pb)),
        "model": _label(*m), "baseline": _label(*base),
        "overlay": overlay, "protocol": protocol, "n": ci.n,
        "model score": _fmt([_score(a) for a, _ in pairs]),
        "baseline score": _fmt([_score(b) for _, b in pairs]),
        "difference": f"{100 * ci.mean:+.2f} ± {100 * ci.std:.2f}",
        "95% CI": "" if ci.n < 2 else f"[{_bound(ci.low)}, {_bound(ci.high)}]",
        "bootstrap 95% CI": bootstrap_cell(pairs),
        "paper gain": "" if gain is None else f"{gain:+.2f}",
        "p": "" if math.isnan(p) else _p(p), "Holm p": "", "Holm p (paper)": "", "Holm p (gains)": "",
        "verdict": verdict(ci, None if gain is None else gain / 100, need, stage(pm, curves)),
        "left out": "; ".join(left),
        "history": row_history(pairs),
        "recipe": recipe,
        # for the Holm columns and the figure; not printed (underscored keys)
        "_ci": ci, "_gain": gain, "_p": p, "_family": gain is not None and ci.n >= max(need, 2),
        # the paper gain the row tests (data, paper rows), and whether its arms are the paper's own rows
        "_tests": (data, paper_m, paper_b), "_own_arms": not as_paper,
        "_pairs": pairs,  # (model record, baseline record) per seed, and their dev curves: the figure
        "_curves": curves,
    }


def mixed_rows(records: list[dict], min_seeds: int = DEFAULT_MIN_SEEDS,
               declared: list[dict] | None = None) -> list[dict]:
    """The rows :data:`MIXED` declares: a model at a fixed budget against its baseline trained under another
    stopping rule (early stopping on dev), paired by seed. The arms must share data, split and recipe except the
    declared trainer keys (``ignore``) and the baseline's declared extra overlays; otherwise the row says why it
    is not comparable. Its stage is the paper's when the model arm passed the plateau rule and every baseline
    run stopped early (or plateaued)."""
    declared = read_yaml(MIXED) if declared is None else declared
    complete = sorted((r for r in records if not is_partial(r)), key=lambda r: r.get("_path", ""))
    rows = []
    for d in declared or []:
        m, base = tuple(d["model"]), tuple(d["baseline"])
        arms = {m: defaultdict(list), base: defaultdict(list)}
        for r in complete:
            folder = Path(r.get("_path", "")).parent
            for arm, globs in ((m, d["model_records"]), (base, d["baseline_records"])):
                if (r["model"], _variant(r)) == arm and any(folder.match(g) for g in globs):
                    arms[arm][r.get("seed")].append(r)
        if not arms[m] or not arms[base]:
            continue
        pairs, left = _pair_by_seed(arms[m], arms[base], equal_epochs=False)
        ignore = tuple(d.get("ignore", ()))
        extra = "+".join(d.get("baseline_overlays", []))
        mismatch = []
        for a, b in pairs:
            if (a["data"], data_split(a)) != (b["data"], data_split(b)):
                mismatch.append(f"seed {a.get('seed')}: data {a['data']} vs {b['data']}")
            if shared_recipe(a, ignore) != shared_recipe(b, ignore):
                mismatch.append(f"seed {a.get('seed')}: recipes differ beyond {', '.join(ignore) or 'nothing'}")
            if "+".join(filter(None, [_overlays(a), extra])) != _overlays(b):
                mismatch.append(f"seed {a.get('seed')}: overlays {_overlays(a) or 'none'} vs {_overlays(b) or 'none'}")
        model_epochs = {_epochs(a) for a, _ in pairs}
        ours = next(iter(model_epochs)) if len(model_epochs) == 1 else None
        protocol = f"model {_arm_protocol([_epochs(a) for a, _ in pairs])}; " \
                   f"baseline {_arm_protocol([_epochs(b) for _, b in pairs])}"
        if not pairs or mismatch:
            rec = pairs[0][0] if pairs else next(iter(arms[m].values()))[-1]
            rows.append(_not_comparable(rec["data"], data_split(rec), m, base, _overlays(rec), "", protocol,
                                        left + mismatch))
            continue

        def stage(pm, curves, ours=ours, pairs=pairs):
            converged = all(_epochs(b) == "early stopping" for _, b in pairs) or plateau([c[1] for c in curves]).ok
            return Stage(ours, _schedule(pm), plateau([c[0] for c in curves]).ok and converged)

        a0 = pairs[0][0]
        row = _row(a0["data"], data_split(a0), _overlays(a0), shared_recipe(a0, ignore), m, base,
                   tuple(tuple(x) for x in d["as_paper"]) if d.get("as_paper") else None, pairs, left, protocol,
                   stage, min_seeds)
        row["history"] = "; ".join(filter(None, [f"mixed protocol: {d['why']}", row["history"]]))
        rows.append(row)
    return rows


def mark_superseded(rows: list[dict], declared: list[dict] | None = None) -> None:
    """Mark the rows :data:`SUPERSEDED` names (``history`` says by what) and take them out of the families."""
    declared = read_yaml(SUPERSEDED) if declared is None else declared
    for r in rows:
        folders = [Path(rec.get("_path", "")).parent for pair in r.get("_pairs") or [] for rec in pair]
        for d in declared:
            if (folders and (r["model"], r["baseline"]) == (d["model"], d["baseline"])
                    and all(any(f.match(g) for g in d["records"]) for f in folders)):
                r["_family"] = False
                r["history"] = "; ".join(filter(None, [f"superseded by {d['by']}: {d['why']}", r["history"]]))


def holm_columns(rows: list[dict]) -> None:
    """The three Holm columns: over the family's rows (``Holm p``), within each paper (``Holm p (paper)``), and
    over the distinct paper gains (``Holm p (gains)``: where several rows test one gain, the row whose arms are the
    paper's own rows stands for it, else the first)."""
    family = [r for r in rows if r.get("_family")]
    for r, adjusted in zip(family, holm([r["_p"] for r in family])):
        r["Holm p"] = _p(adjusted)
    papers: dict[str, list[dict]] = defaultdict(list)
    for r in family:
        papers[r["_tests"][1][0]].append(r)
    for members in papers.values():
        for r, adjusted in zip(members, holm([r["_p"] for r in members])):
            r["Holm p (paper)"] = _p(adjusted)
    gains: dict[tuple, dict] = {}
    for r in sorted(family, key=lambda r: not r["_own_arms"]):
        gains.setdefault(r["_tests"], r)
    for r, adjusted in zip(gains.values(), holm([r["_p"] for r in gains.values()])):
        r["Holm p (gains)"] = _p(adjusted)
    standing = {id(r) for r in gains.values()}
    for r in family:
        if id(r) not in standing:
            stands = gains[r["_tests"]]
            again = (f"tests the gain of the {stands['model']} − {stands['baseline']} row again (its Holm p (gains) "
                     "stands for both)")
            r["history"] = "; ".join(filter(None, [again, r["history"]]))


def _bound(x: float) -> str:
    """A CI bound in points: 2 decimals, 3 where 2 would show a nonzero bound as ±0.00."""
    return f"{100 * x:+.3f}" if 0 < abs(100 * x) < 0.005 else f"{100 * x:+.2f}"


def _p(p: float) -> str:
    return f"{p:.3f}" if p >= 0.001 else "<0.001"


def public(row: dict) -> dict:
    """A row without its underscored working keys (the printed and logged columns)."""
    return {k: v for k, v in row.items() if not k.startswith("_")}


def paired_markdown(rows: list[dict]) -> str:
    if not rows:
        return ""
    family = sum(bool(r.get("_family")) for r in rows)
    table = _section(
        "Paired comparisons",
        "Each paper model against its own baseline (the paper's ablation row), same data and split, same recipe "
        "and overlays, paired by seed wherever the records lie. `difference`: mean ± std over seeds of the per-seed "
        "difference (model − baseline), in points; `95% CI`: paired t interval of the mean difference (over seeds); "
        "`bootstrap 95% CI`: paired bootstrap over test sentences (1000 resamples, the same sentences for both arms "
        "and every seed; empty where a record has no per-sentence counts); `paper gain`: the paper's model row "
        "minus its baseline row; `split` is marked where the test sets differ in size. `left out`: seeds that could "
        "not be paired. `history`: what the records hold beyond their final numbers (arms at different commits and what "
        "differs in `ner_zoo/` between them, tests before the final one, resumed and paused runs, a superseded row; "
        "`ner_zoo/results/history.py`). `recipe`: hash of what the arms share (trainer and data config, optimiser "
        "arguments).\n\n"
        + VERDICT_RULE + f" Fewer than {DEFAULT_MIN_SEEDS} seeds ({MIN_SEEDS['PSA']} for PSA, whose gain is small "
        "against its std) are flagged.", [public(r) for r in rows])
    papers = len({r["_tests"][1][0] for r in rows if r.get("_family")})
    gains = len({r["_tests"] for r in rows if r.get("_family")})
    superseded = sum(r["history"].startswith("superseded") for r in rows)
    return (table + f"\n\nHolm families. `Holm p`: the {family} rows above that test a paper gain with the "
            f"protocol's seeds ({superseded} superseded rows, `ner_zoo/results/superseded.yaml`, are kept out of every "
            f"family). `Holm p (paper)`: the same rows, one family per paper ({papers} papers). `Holm p (gains)`: one "
            f"hypothesis per distinct paper gain ({gains}): where several rows test one gain (the HCR memory read "
            "another way), the row whose arms are the paper's own rows stands for it."
            + "\n\n" + summary_markdown(rows))


def summary_rows(rows: list[dict]) -> list[dict]:
    """The short table (the README's): the Holm family's rows, fewer columns."""
    return [{"data": r["dataset"], "model − baseline": f"{r['model']} − {r['baseline']}",
             "epochs": r["protocol"].removeprefix("equal epochs = "), "seeds": r["n"], "difference": r["difference"],
             "95% CI (t)": r["95% CI"], "bootstrap": r["bootstrap 95% CI"], "paper": r["paper gain"],
             "Holm p": r["Holm p"], "Holm p (paper)": r["Holm p (paper)"], "Holm p (gains)": r["Holm p (gains)"],
             "verdict": r["verdict"]} for r in rows if r.get("_family")]


def summary_markdown(rows: list[dict]) -> str:
    table = summary_rows(rows)
    if not table:
        return ""
    return "\n".join(["**Summary** (the Holm family; the README copies this table):", "",
                      *_markdown_table(table, list(table[0]))])

