"""One LightningModule per paper (plus the baselines they compare against)."""

from ner_zoo.models.bilstm_crf import BiLSTMCRF
from ner_zoo.models.psa import PSA
from ner_zoo.models.min import MIN
from ner_zoo.models.hcr import HCR

__all__ = ["BiLSTMCRF", "PSA", "MIN", "HCR"]
