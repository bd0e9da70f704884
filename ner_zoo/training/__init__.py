from ner_zoo.training.schedulers import InverseTimeDecay, LinearWarmupDecay

__all__ = ["InverseTimeDecay", "LinearWarmupDecay"]
