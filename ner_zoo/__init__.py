"""ner-zoo: a PyTorch Lightning model zoo for named entity recognition and sequence labeling."""

__version__ = "0.1.0"
