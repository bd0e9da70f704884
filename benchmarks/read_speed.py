"""How fast the corpus readers are, against a floor measured in the same process.

The floor is the least any pure-Python column reader must do: read the bytes, decode, split into lines
and split every line. The ratio ``reader / floor`` is what the reader adds (sentences, spans, scheme
detection, checks). Targets (2-core dev machine): CoNLL-2003 train+dev+test with vocabularies < 2 s,
OntoNotes 5 (1.4M tokens) < 15 s.

Usage: ``python benchmarks/read_speed.py [--data DIR] [--repeat N]`` (DIR defaults to $NER_ZOO_DATA or
/work/shared/data). Prints a markdown table; corpora that are absent are left out.
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing
from ner_zoo.data.readers import read_conll, read_nested_json, read_ptb_mrg


def floor(paths: list[Path]) -> int:
    n = 0
    for p in paths:
        for line in p.read_bytes().decode("utf-8").split("\n"):
            n += bool(line.split())
    return n


def best_of(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
    return best, result


def conll_with_vocab(paths: list[Path], columns: dict[str, int]) -> list:
    sents = [s for p in paths for s in read_conll(p, columns=columns)]
    try:
        from ner_zoo.data.vocab import Vocab
    except ImportError:
        return sents
    Vocab.build_words(sents)
    Vocab.build_chars(sents)
    return sents


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.environ.get("NER_ZOO_DATA", "/work/shared/data"))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(__import__('host').host_line(), flush=True)  # benchmarks/host.py: which machine
    data = Path(args.data)
    warnings.simplefilter("ignore")  # ACE duplicate-span warnings

    cases = [
        ("CoNLL-2003 train+dev+test, + word/char vocab", "conll2003", ["eng.train", "eng.testa", "eng.testb"],
         lambda ps: conll_with_vocab(ps, {"pos": 1, "chunk": 2}), 2.0),
        ("OntoNotes 5 train+dev+test", "ontonotes5", ["onto.train.ner", "onto.development.ner", "onto.test.ner"],
         lambda ps: [s for p in ps for s in read_conll(p, columns={"pos": 1})], 15.0),
        ("GENIA train+dev+test (JSON)", "genia", ["train.jsonlines", "dev.jsonlines", "test.jsonlines"],
         lambda ps: [s for p in ps for s in read_nested_json(p)], None),
        ("ACE 2005 train+dev+test (JSON)", "ace2005", ["train.json", "dev.json", "test.json"],
         lambda ps: [s for p in ps for s in read_nested_json(p)], None),
        ("WSJ sample (.mrg trees)", "wsj_pos", ["combined"], lambda ps: read_ptb_mrg(ps[0]), None),
    ]
    rows = []
    for label, folder, files, fn, target in cases:
        paths = [data / folder / f for f in files]
        if not all(p.exists() for p in paths):
            continue
        t_ours, sents = best_of(functools.partial(fn, paths), args.repeat)
        tokens = sum(len(s) for s in sents)
        text_files = [p for p in paths if p.is_file()]
        if text_files:
            t_floor = best_of(functools.partial(floor, text_files), args.repeat)[0]
            vs = f"{t_floor:.2f} | {t_ours / t_floor:.1f}x"
        else:  # a folder of files: no floor measured
            vs = "n/a | n/a"
        ok = "" if target is None else ("yes" if t_ours < target else "**NO**")
        rows.append(f"| {label} | {len(sents):,} | {tokens:,} | {t_ours:.2f} | {vs} | "
                    f"{'' if target is None else f'< {target:g} s'} | {ok} |")
    print(f"best of {args.repeat} runs, seconds; floor = decode + split lines + split each line (same process)\n")
    print("| corpus | sentences | tokens | reader (s) | floor (s) | reader / floor | target | met |")
    print("|---|---:|---:|---:|---:|---:|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
