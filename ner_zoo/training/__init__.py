from ner_zoo.training.schedulers import InverseTimeDecay, LinearWarmupDecay
from ner_zoo.training.speed import CompileModules, HalfPrecisionLSTM

__all__ = ["CompileModules", "HalfPrecisionLSTM", "InverseTimeDecay", "LinearWarmupDecay"]
