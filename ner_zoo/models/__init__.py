"""One LightningModule per paper (plus the baselines they compare against)."""

from ner_zoo.models.bilstm_crf import BiLSTMCRF
from ner_zoo.models.psa import PSA
from ner_zoo.models.min import MIN
from ner_zoo.models.hcr import HCR
from ner_zoo.models.span_classifier import ExhaustiveSpanClassifier
from ner_zoo.models.transformer_tagger import TransformerTagger

__all__ = ["BiLSTMCRF", "PSA", "MIN", "HCR", "ExhaustiveSpanClassifier", "TransformerTagger"]
from ner_zoo.models.locate_and_label import LocateAndLabel; __all__.append("LocateAndLabel")  # noqa: E402,E702
from ner_zoo.models.dspert import DSpERT; __all__.append("DSpERT")  # noqa: E402,E702
from ner_zoo.models.biaffine_ner import BiaffineNER; __all__.append("BiaffineNER")  # noqa: E402,E702
