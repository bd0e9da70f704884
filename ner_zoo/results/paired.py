"""The "Paired comparisons" table of ``ner-zoo compare``: each paper model against its own baseline (the paper's
ablation row), paired by seed, with a paired-t 95 % confidence interval and a verdict.

Two runs are the two arms of one comparison when they share the data and its split, the recipe overlays and
the training recipe (``trainer`` and ``data`` sections of the config without run-specific keys such as seed,
paths and ``max_time``, and the model's optimiser arguments), wherever their ``results.json`` lie. Seed
``s`` of the model is paired with seed ``s`` of the baseline when both trained the same number of epochs
(``protocol.epochs``, else ``epochs`` in older records) or both stopped early on dev; other seeds are listed
in ``left out``, never dropped silently.

The second interval, ``bootstrap 95% CI``, resamples the test sentences (1000 resamples, the same sentences for
both arms and every seed): the uncertainty due to the finite test set, where the paired t interval measures
the seeds'. It needs every paired record's per-sentence counts (``test_sentences``), over the same number of
sentences; it is empty otherwise.
"""

from __future__ import annotations

from collections import defaultdict

from ner_zoo.results.compare import (_fmt, _label, _overlays, _score, _section, _variant, data_split, is_partial,
                             paper_results, split_cell)
from ner_zoo.results.stats import paired_bootstrap, paired_ci, verdict
from ner_zoo.results.fields import config_hash, decode_sentence_counts

#: (model, variant) -> its baselines, as the papers compare them (ablation rows and same-encoder baselines)
PAIRS: list[tuple[tuple[str, str | None], tuple[str, str | None]]] = [
    (("HCR", "all"), ("HCR", "base")), (("HCR", "sentence"), ("HCR", "base")), (("HCR", "document"), ("HCR", "base")),
    (("HCR", "released_bug"), ("HCR", "base")), (("HCR", "all"), ("HCR", "released_bug")),
    (("MIN", None), ("MIN", "ner_only")), (("MIN", "no_interaction"), ("MIN", "ner_only")),
    (("MIN", "no_interacted_subtasks"), ("MIN", "ner_only")), (("MIN", None), ("MIN", "no_interacted_subtasks")),
    (("PSA", None), ("PSA", "no_fusion")),
    (("DSpERT", None), ("DSpERT", "shallow")), (("DSpERT", None), ("BiaffineNER", None)),
    (("LocateAndLabel", None), ("LocateAndLabel", "no_regressor")),
    (("LocateAndLabel", None), ("ExhaustiveSpanClassifier", "lnl_encoder")),
]
#: fewest seeds per arm for a verdict; more where the paper's gain is small against its std (PSA)
MIN_SEEDS = {"PSA": 9}
DEFAULT_MIN_SEEDS = 5


#: model arguments that belong to the training recipe, not to the architecture, where a model has them
RECIPE_ARGS = ("optimizer", "lr_scheduler", "lr", "pretrained_lr", "weight_decay", "loss_reduction")


def shared_recipe(rec: dict) -> str:
    """Hash of what both arms of a comparison must share: the trainer and data sections of the config and the
    model's optimisation arguments (:data:`RECIPE_ARGS`)."""
    config = rec.get("config") or {}
    init = (config.get("model") or {}).get("init_args") or {}
    return config_hash({"trainer": config.get("trainer"), "data": config.get("data"),
                        "optim": {k: init[k] for k in RECIPE_ARGS if k in init}})


def _epochs(rec: dict) -> float | str | None:
    protocol = rec.get("protocol") or {}
    if protocol.get("stopped_by") == "early_stopping":
        return "early stopping"
    return protocol.get("epochs", rec.get("epochs"))


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


def paired_rows(records: list[dict], min_seeds: int = DEFAULT_MIN_SEEDS) -> list[dict]:
    papers = paper_results()

    def paper(model: str, variant: str | None, data: str) -> dict | None:
        return next((p for p in papers if (p["model"], p.get("variant"), p["data"]) == (model, variant, data)), None)

    rows = []
    for (data, split, overlay, recipe), arms in sorted(_arms(records).items(), key=lambda kv: str(kv[0])):
        for (m, base) in PAIRS:
            if m not in arms or base not in arms:
                continue
            left, pairs = [], []
            for seed in sorted(set(arms[m]) | set(arms[base]), key=str):
                a, b = arms[m].get(seed), arms[base].get(seed)
                if not a or not b:
                    left.append(f"seed {seed}: only {'model' if a else 'baseline'}")
                    continue
                if len(a) > 1 or len(b) > 1:
                    left.append(f"seed {seed}: {len(a) + len(b) - 2} older duplicate run(s)")
                a, b = a[-1], b[-1]  # the last by path
                if _epochs(a) != _epochs(b):
                    left.append(f"seed {seed}: epochs {_epochs(a)} vs {_epochs(b)}")
                    continue
                pairs.append((a, b))
            if not pairs:  # both arms ran, but never under the same protocol: say so rather than hide it
                if any("epochs" in why for why in left):
                    rows.append({"dataset": data, "split": split, "model": _label(*m), "baseline": _label(*base),
                                 "overlay": overlay, "protocol": "unequal epochs", "n": 0, "model score": "",
                                 "baseline score": "", "difference": "", "95% CI": "", "bootstrap 95% CI": "",
                                 "paper gain": "",
                                 "verdict": "not comparable", "left out": "; ".join(left), "recipe": recipe})
                continue
            ci = paired_ci([_score(a) for a, _ in pairs], [_score(b) for _, b in pairs])
            pm, pb = paper(*m, data), paper(*base, data)
            gain = None if pm is None or pb is None else pm["value"] - pb["value"]
            need = MIN_SEEDS.get(m[0], min_seeds)
            rows.append({
                "dataset": data, "split": split_cell(split, (pm, pb)), "model": _label(*m), "baseline": _label(*base),
                "overlay": overlay, "protocol": _protocol([_epochs(a) for a, _ in pairs]), "n": ci.n,
                "model score": _fmt([_score(a) for a, _ in pairs]),
                "baseline score": _fmt([_score(b) for _, b in pairs]),
                "difference": f"{100 * ci.mean:+.2f} ± {100 * ci.std:.2f}",
                "95% CI": "" if ci.n < 2 else f"[{100 * ci.low:+.2f}, {100 * ci.high:+.2f}]",
                "bootstrap 95% CI": bootstrap_cell(pairs),
                "paper gain": "" if gain is None else f"{gain:+.2f}",
                "verdict": verdict(ci, gain, need), "left out": "; ".join(left),
                "recipe": recipe,
            })
    return rows


def paired_markdown(rows: list[dict]) -> str:
    return _section(
        "Paired comparisons",
        "Each paper model against its own baseline (the paper's ablation row), same data and split, same recipe "
        "and overlays, paired by seed wherever the records lie. `difference`: mean ± std over seeds of the per-seed "
        "difference (model − baseline), in points; `95% CI`: paired t interval of the mean difference (over seeds); "
        "`bootstrap 95% CI`: paired bootstrap over test sentences (1000 resamples, the same sentences for both arms "
        "and every seed; empty where a record has no per-sentence counts); `verdict`: "
        "*reproduced* when the CI excludes 0 on the side of the paper's gain, *contradicted* when it excludes 0 on "
        f"the other side, else *inconclusive*; fewer than {DEFAULT_MIN_SEEDS} seeds ({MIN_SEEDS['PSA']} for PSA, "
        "whose gain is small against its std) are flagged. `left out`: seeds that could not be paired. `recipe`: "
        "hash of what the arms share (trainer and data config, optimiser arguments).", rows)
