"""Results: run records (``results.json``), ``ner-zoo compare`` and its paired statistics, the papers' numbers
(``paper_results.yaml``), W&B tables and the config table of ``docs/configs.md``."""
