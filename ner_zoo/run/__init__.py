"""A fit run of ``ner-zoo fit``: its folder (``folder``), the record callback (``recorder``), the W&B run, the
final model, precision support, atomic checkpoint writes and the examples callback. Used by the CLI only."""
