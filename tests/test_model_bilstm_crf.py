"""The generic battery for the BiLSTM-CRF baselines (char BiLSTM + CRF; char CNN + softmax)."""

from battery import ModelBattery
from ner_zoo.testing.tiny import tiny_model

CHAR_CNN = {"class_path": "ner_zoo.modules.CharCNN", "init_args": {"char_dim": 8, "filters": 8}}


class TestBiLSTMCRF(ModelBattery):
    model = tiny_model("bilstm_crf")


class TestCNNBiLSTMSoftmax(ModelBattery):
    model = {"class_path": "ner_zoo.models.BiLSTMCRF",
             "init_args": {"words": {"dim": 16}, "lstm_hidden": 16, "char_encoder": CHAR_CNN, "use_crf": False,
                           "optimizer": {"class_path": "torch.optim.SGD", "init_args": {"lr": 0.1, "momentum": 0.9}},
                           "lr_scheduler": {"class_path": "ner_zoo.training.InverseTimeDecay",
                                            "init_args": {"decay": 0.05}}}}
