"""One file per paper (plus the baselines they compare against): its network ``<Paper>Net`` (plain torch) and,
made on first access, ``<Paper>``, the LightningModule that fits it (what configs name). Imported on first use,
so ``import ner_zoo.models`` imports no model file and no Lightning."""

import importlib

#: exported name (without ``Net``) -> its model file
FILES = {"BiaffineNER": "biaffine_ner", "BiLSTMCRF": "bilstm_crf", "DSpERT": "dspert", "ExhaustiveSpanClassifier":
         "span_classifier", "HCR": "hcr", "LocateAndLabel": "locate_and_label", "MIN": "min", "PSA": "psa",
         "TransformerTagger": "transformer_tagger"}

__all__ = ["BiaffineNER", "BiLSTMCRF", "DSpERT", "ExhaustiveSpanClassifier", "HCR", "LocateAndLabel", "MIN", "PSA",
           "TransformerTagger"]


def __getattr__(name: str):
    paper = name[:-len("Net")] if name.endswith("Net") else name
    if paper not in FILES:
        raise AttributeError(f"module 'ner_zoo.models' has no attribute {name!r}")
    return getattr(importlib.import_module(f"ner_zoo.models.{FILES[paper]}"), name)


def __dir__() -> list[str]:
    return sorted(__all__ + [f"{n}Net" for n in __all__])
