"""One LightningModule per paper (plus the baselines they compare against)."""

from ner_zoo.models.bilstm_crf import BiLSTMCRF

__all__ = ["BiLSTMCRF"]
