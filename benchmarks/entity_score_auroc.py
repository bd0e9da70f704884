"""How well do the per-entity scores of ``ner_zoo.load`` rank correct entities above wrong ones?

    python benchmarks/entity_score_auroc.py --model runs/.../best.ckpt --data $NER_ZOO_DATA/conll2003/eng.testa

Every predicted entity of the CoNLL file's sentences is correct when the gold has the same (start, end, label).
Prints the counts, the AUROC of the scores for correct vs wrong (the probability that a random correct entity
scores above a random wrong one, ties counted half: 0.5 is chance) and the precision of the most and least
confident halves. docs/api.md records a run.
"""

from __future__ import annotations

import argparse
import bisect
import json
from pathlib import Path


def auroc(pos: list[float], neg: list[float]) -> float:
    """Mann-Whitney U / (|pos| |neg|)."""
    neg = sorted(neg)
    wins = sum(bisect.bisect_left(neg, p) + 0.5 * (bisect.bisect_right(neg, p) - bisect.bisect_left(neg, p))
               for p in pos)
    return wins / (len(pos) * len(neg))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="a checkpoint or an exported folder")
    p.add_argument("--data", required=True, type=Path, help="a CoNLL file with gold tags in the last column")
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
    print(__import__('host').host_line(), flush=True)  # benchmarks/host.py: which machine
    import ner_zoo
    from ner_zoo.data.readers import read_conll
    from ner_zoo.data.schema import Sentence

    sents = read_conll(a.data, token_column=0, label_column=-1)
    tagger = ner_zoo.load(a.model, device=a.device)
    preds = tagger.predict_sentences([Sentence(list(s.tokens)) for s in sents])
    scored = []  # (score, correct)
    for s, (spans, scores) in zip(sents, preds):
        gold = set(s.spans)
        scored += [(sc, sp in gold) for sp, sc in zip(spans, scores)]
    pos = [sc for sc, ok in scored if ok]
    neg = [sc for sc, ok in scored if not ok]
    ranked = sorted(scored, reverse=True)
    half = len(ranked) // 2
    out = {"model": str(a.model), "data": str(a.data), "sentences": len(sents), "entities": len(scored),
           "correct": len(pos), "wrong": len(neg), "auroc": round(auroc(pos, neg), 4) if pos and neg else None,
           "precision_top_half": round(sum(ok for _, ok in ranked[:half]) / max(1, half), 4),
           "precision_bottom_half": round(sum(ok for _, ok in ranked[half:]) / max(1, len(ranked) - half), 4),
           "scores_in_0_1": all(0.0 <= sc <= 1.0 for sc, _ in scored)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
