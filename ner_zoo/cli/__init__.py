"""Command-line interface: ``ner-zoo`` (see :mod:`ner_zoo.cli.main`)."""
