from ner_zoo.training import inference  # noqa: F401  (lends the data layer its column predictor)
from ner_zoo.training.schedulers import InverseTimeDecay, LinearWarmupDecay
from ner_zoo.training.speed import CompileModules, HalfPrecisionLSTM

__all__ = ["CompileModules", "HalfPrecisionLSTM", "InverseTimeDecay", "LinearWarmupDecay"]
