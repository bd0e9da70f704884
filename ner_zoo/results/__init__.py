"""``ner-zoo compare``: what it reads from run records (``fields``), its paired statistics, tables and figures, the
papers' numbers (``paper_results.yaml``) and the W&B tables of a comparison. Records are written by
:mod:`ner_zoo.run.recorder`."""
