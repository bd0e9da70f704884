"""Moved to :mod:`ner_zoo.api.light` (``ner_zoo.load`` uses the stand-ins too); this name stays an alias of it."""

import sys

from ner_zoo.api import light

sys.modules[__name__] = light
