"""The model card (``README.md``) of an exported folder, from its config and the run record (``results.json``).

The front matter is the Hugging Face Hub's model-card metadata (``library_name``, ``tags``, ``pipeline_tag``,
``base_model``); the text states what the record knows (data and split, scores with the seed, recipe,
hardware, versions) and says so where it knows nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

from ner_zoo.dotted import short_name

#: what we know of a corpus's terms; anything else: the card asks the user to check the corpus's own licence
LICENCE_NOTES = {
    "CoNLL2003": "CoNLL-2003 English is built on the Reuters RCV1 corpus, distributed by NIST under a research-only "
                 "agreement: check that agreement before any other use of this model.",
    "OntoNotes5": "OntoNotes 5.0 is distributed by the LDC (LDC2013T19) under its user agreement.",
    "ACE2004": "ACE 2004 is distributed by the LDC (LDC2005T09) under its user agreement.",
    "ACE2005": "ACE 2005 is distributed by the LDC (LDC2006T06) under its user agreement.",
    "KBP2017": "TAC KBP 2017 data is distributed by the LDC under its user agreement.",
    "SampleCorpus": "The sample corpus is synthetic and ships with ner-zoo (Apache-2.0). It is templated: a model "
                    "trained on it is a smoke test, not a usable tagger.",
}


def find_record(ckpt: Path, record: str | Path | None = None) -> dict | None:
    """The run record given, or ``results.json`` beside the checkpoint or one or two folders up (one whose
    ``best_checkpoint`` is this checkpoint is preferred)."""
    if record is not None:
        return json.loads(Path(record).read_text())
    if ckpt.is_dir():
        return None
    found = []
    for folder, patterns in ((ckpt.parent, ["results.json"]), (ckpt.parent.parent, ["results.json", "*/results.json",
                                                                                     "*/*/results.json"])):
        for pattern in patterns:
            found += [p for p in sorted(folder.glob(pattern)) if p not in found]
    best = None
    for path in found:
        try:
            rec = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if str(rec.get("best_checkpoint", "")) == str(ckpt) or Path(str(rec.get("best_checkpoint", ""))).resolve() \
                == ckpt.resolve():
            return rec
        best = best or rec
    return best if len(found) == 1 else None  # an unrelated record is worse than none


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * float(x):.2f}"


def model_card(config: dict, rec: dict | None, source: Path) -> str:
    model = short_name(config["model_class"])
    labels = ", ".join(config.get("labels") or []) or "(tags)"
    base = [e for e in config.get("encoders") or [] if e]
    data = (rec or {}).get("data") or "unknown"
    front = ["---", "library_name: ner-zoo", "pipeline_tag: token-classification",
             "tags:", "- ner-zoo", "- named-entity-recognition", f"- {config.get('task')}"]
    if base and not str(base[0]).startswith(("/", ".")):
        front.append(f"base_model: {base[0]}")
    front.append("---")
    lines = front + ["", f"# {model} ({data})", "",
                     f"A `{model}` model from ner-zoo, exported from `{source.name}` with "
                     "`ner-zoo export`.", "",
                     "```python", "import ner_zoo", "", 'tagger = ner_zoo.load("path/to/this/folder")',
                     'tagger("Angela Merkel visited Paris on Tuesday.")  # entities with offsets and scores', "```", "",
                     "## Model", "",
                     f"- class: `{config['model_class']}`; task: `{config.get('task')}`; tag scheme: "
                     f"`{config.get('tag_scheme')}`",
                     f"- labels: {labels}",
                     f"- encoder: {', '.join(f'`{b}`' for b in base) if base else 'none (word and character embeddings)'}",
                     ""]
    if config.get("runtime") == "onnx":
        lines[-1:-1] = ["- format: ONNX (`model.onnx`, the scoring network; decoded in numpy"
                        + (", CRF scores in `crf.json`" if config["onnx"].get("decoder") == "crf" else "")
                        + (", the transformer's tokenizer in `tokenizer.json`" if config["onnx"].get("encoder") else "")
                        + "): needs `onnxruntime`, not torch"]
    if rec is None:
        lines += ["## Training", "", "No run record (`results.json`) was found next to the checkpoint: the data, "
                  "scores and recipe of this model are unknown. Export with `--record results.json` to include them.",
                  ""]
    else:
        test = rec.get("test") or {}
        lines += ["## Data", "", f"- corpus: `{data}`; split: `{rec.get('data_split', 'unknown')}`",
                  f"- licence: {LICENCE_NOTES.get(data, 'check the licence of the corpus this model was trained on before using or sharing it.')}",
                  "", "## Scores", ""]
        if test:
            lines += [f"Test set (seed {rec.get('seed')}): micro F1 **{_pct(test.get('f1'))}**, precision "
                      f"{_pct(test.get('precision'))}, recall {_pct(test.get('recall'))}"
                      + (" (part of the test split only)" if rec.get("partial_test") else "") + ".", ""]
            per_type = sorted({k.split("/", 1)[1] for k in test if k.startswith("f1/") and "len" not in k})
            if per_type:
                lines += ["| type | F1 |", "|---|---|"] + [f"| {t} | {_pct(test.get('f1/' + t))} |" for t in per_type] + [""]
        else:
            lines += ["The run record has no test scores (the model was not tested after training).", ""]
        lines += [f"Best validation F1: {_pct(rec.get('best_val_f1'))} (epoch {rec.get('best_epoch')}). One seed "
                  f"({rec.get('seed')}): seed-to-seed spread is not in this card; `ner-zoo compare` over several runs "
                  "gives it.", "",
                  "## Recipe", "", f"- command: `{rec.get('command')}`", f"- config hash: `{rec.get('config_hash')}`; "
                  f"git: `{(rec.get('git') or {}).get('commit')}`",
                  f"- epochs: {rec.get('epochs')}; precision: {rec.get('precision')}; fit time: "
                  f"{rec.get('fit_seconds')} s",
                  f"- hardware: {json.dumps(rec.get('hardware'))}", f"- versions: {json.dumps(rec.get('versions'))}", ""]
    lines += ["## Intended use and limits", "",
              f"Tagging {labels} entities in text like the training corpus. Scores are measured on that corpus's "
              "test split; expect lower accuracy on other domains, genres, languages or tokenization. Entity scores "
              "are model confidences, not calibrated probabilities. Review predictions before using them in "
              "decisions about people.", ""]
    return "\n".join(lines)
