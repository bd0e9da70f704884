"""One LightningModule per paper (plus the baselines they compare against)."""

from ner_zoo.models.biaffine_ner import BiaffineNER
from ner_zoo.models.bilstm_crf import BiLSTMCRF
from ner_zoo.models.dspert import DSpERT
from ner_zoo.models.hcr import HCR
from ner_zoo.models.locate_and_label import LocateAndLabel
from ner_zoo.models.min import MIN
from ner_zoo.models.psa import PSA
from ner_zoo.models.span_classifier import ExhaustiveSpanClassifier
from ner_zoo.models.transformer_tagger import TransformerTagger

__all__ = ["BiaffineNER", "BiLSTMCRF", "DSpERT", "ExhaustiveSpanClassifier", "HCR", "LocateAndLabel", "MIN", "PSA",
           "TransformerTagger"]
