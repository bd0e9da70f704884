"""Generate the bundled sample corpus (synthetic sentences from templates; no real corpus text).

Some names belong to several types (Jordan, Florence, Georgia, Sydney), so context matters.

Run: python tools/make_sample_corpus.py  (deterministic; rewrites ner_zoo/data/sample/*.conll)
"""

import random
from pathlib import Path

PER = ["Anna Berg", "Marco Rossi", "Li Wei", "Sara Okafor", "John Miller", "Eva Novak", "Omar Haddad",
       "Mei Tanaka", "Paul Dubois", "Nina Petrova", "Carlos Vega", "Ingrid Holm", "Raj Patel", "Tom",
       "Jordan", "Georgia Banks", "Sydney Clark", "Florence"]
LOC = ["Paris", "Nairobi", "Lake Geneva", "Oslo", "New Delhi", "Lima", "Cape Town", "Kyoto", "Berlin",
       "the Alps", "Quebec City", "Cairo", "Sydney", "Rio de Janeiro", "Jordan", "Georgia", "Florence"]
ORG = ["Acme Corp", "the United Nations", "Globex", "Red Cross", "Northwind Bank", "Initech",
       "the World Bank", "Umbrella Labs", "Blue Harbor Foods", "Stark Industries", "FC Porto", "Cairo Motors",
       "Florence Group"]
MISC = ["Olympic", "French", "Nobel Prize", "Kenyan", "Japanese", "World Cup", "Euro", "Norwegian", "Georgian"]

TEMPLATES = [
    "{PER} visited {LOC} on Monday .",
    "{PER} works for {ORG} in {LOC} .",
    "{ORG} opened a new office in {LOC} .",
    "The {MISC} delegation met {PER} at {ORG} .",
    "{PER} said {ORG} would expand to {LOC} next year .",
    "Shares of {ORG} rose 3 percent after {PER} spoke .",
    "{PER} won the {MISC} final in {LOC} .",
    "In {LOC} , {PER} and {PER} signed a deal with {ORG} .",
    "{ORG} and {ORG} agreed to merge , {PER} told reporters .",
    "A {MISC} team arrived in {LOC} late on Friday .",
    "Rain delayed the match between {ORG} and {ORG} .",
    "{PER} left {LOC} for {LOC} .",
    "Officials said the talks were constructive .",
    "{PER} met {PER} in {LOC} .",
    "{LOC} beat {LOC} 2-1 in the {MISC} qualifier .",
    "Analysts at {ORG} expect growth in {LOC} .",
    "The report by {ORG} was published in {LOC} .",
]


def fill(template, rng):
    tokens, tags = [], []
    for piece in template.split():
        if piece.startswith("{") and piece.endswith("}"):
            label = piece[1:-1]
            words = rng.choice(globals()[label]).split()
            tokens += words
            tags += [f"B-{label}"] + [f"I-{label}"] * (len(words) - 1)
        else:
            tokens.append(piece)
            tags.append("O")
    return tokens, tags


def main():
    rng = random.Random(2026)
    out = Path(__file__).resolve().parents[1] / "ner_zoo" / "data" / "sample"
    for split, n in (("train", 400), ("dev", 80), ("test", 80)):
        lines = []
        for i in range(n):
            if i % 20 == 0:
                lines += ["-DOCSTART- O", ""]
            tokens, tags = fill(rng.choice(TEMPLATES), rng)
            lines += [f"{t} {g}" for t, g in zip(tokens, tags)] + [""]
        (out / f"{split}.conll").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
