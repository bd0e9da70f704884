"""Generate the bundled sample corpus: synthetic sentences (no real corpus text) whose test score means something.

* Every split draws its names from pools of its own: no person, place, organisation or miscellaneous mention of
  dev or test occurs in train, and the name words of persons and places are split too (``Anna`` is a training
  first name only). A model must tag test entities from their context and their shape, not recall them.
  ``tests/test_sample_corpus.py`` checks it.
* Sentences vary in form: many templates (some only in dev and test), optional openings and endings, entities at
  the start, middle and end, quotes, numbers, lower-case words, sentences without entities.
* Some words are several types (a person ``Florence``, a place ``Florence``; an organisation named after a
  place), so context matters.

Run: python tools/make_sample_corpus.py  (deterministic; rewrites ner_zoo/data/sample/{train,dev,test}.conll)
"""

from __future__ import annotations

import random
from pathlib import Path

SPLITS = (("train", 400), ("dev", 80), ("test", 80))

# name words, dealt out to the splits (train gets the first share, dev and test the rest); see pools()
FIRST = ["Anna", "Marco", "Li", "Sara", "John", "Eva", "Omar", "Mei", "Paul", "Nina", "Carlos", "Ingrid", "Raj",
         "Tom", "Lucia", "Pedro", "Hana", "Igor", "Fatima", "Kofi", "Elena", "Yusuf", "Greta", "Diego", "Aiko",
         "Samuel", "Leila", "Viktor", "Maya", "Hugo", "Amara", "Felix", "Zara", "Tariq", "Olga", "Bruno", "Priya",
         "Jonas", "Chloe", "Mateo", "Sofia", "Arjun", "Helga", "Luca", "Nadia", "Oscar", "Rosa", "Kenji"]
LAST = ["Berg", "Rossi", "Wei", "Okafor", "Miller", "Novak", "Haddad", "Tanaka", "Dubois", "Petrova", "Vega",
        "Holm", "Patel", "Fischer", "Silva", "Kowalski", "Mensah", "Ivanov", "Larsen", "Costa", "Nakamura", "Brandt",
        "Moreau", "Osei", "Lindqvist", "Alvarez", "Sato", "Kruger", "Demir", "Walsh", "Horvat", "Jensen", "Reyes",
        "Bauer", "Mwangi", "Ferreira", "Novotny", "Quinn", "Yilmaz", "Dalton", "Hoffmann", "Ortega", "Abbasi",
        "Lund", "Marsh", "Conti", "Sorensen", "Varga"]
PLACES = ["Paris", "Nairobi", "Oslo", "Lima", "Kyoto", "Berlin", "Cairo", "Quito", "Dakar", "Perth", "Porto",
          "Riga", "Hanoi", "Tunis", "Bergen", "Malaga", "Accra", "Lyon", "Turin", "Krakow", "Lagos", "Seville",
          "Tallinn", "Bogota", "Kampala", "Lisbon", "Graz", "Osaka", "Leeds", "Valencia", "Tbilisi", "Manila",
          "Geneva", "Munich", "Ankara", "Havana", "Santiago", "Zagreb", "Windhoek", "Hobart", "Split", "Bremen"]
REGIONS = ["Cape Town", "New Delhi", "Rio de Janeiro", "Quebec City", "Lake Geneva", "the Alps", "San Diego",
           "Hong Kong", "Buenos Aires", "the Andes", "Costa Rica", "New Zealand", "Sri Lanka", "Abu Dhabi",
           "the Sahara", "Tel Aviv", "Kuala Lumpur", "Mexico City"]
ORG_HEADS = ["Acme", "Globex", "Initech", "Northwind", "Umbrella", "Stark", "Blue Harbor", "Redwood", "Silverline",
             "Pinecrest", "Orion", "Keystone", "Bluebird", "Ironclad", "Sunrise", "Vertex", "Crescent", "Summit",
             "Granite", "Harbor Point", "Evergreen", "Lakeside", "Aurora", "Falcon", "Nimbus", "Copperfield",
             "Maple", "Westbrook", "Halcyon", "Starling"]
ORG_TAILS = ["Corp", "Bank", "Group", "Labs", "Foods", "Motors", "Airlines", "Energy", "Holdings", "Media",
             "Partners", "Industries"]
ORG_FIXED = ["the United Nations", "Red Cross", "the World Bank", "FC Porto", "the Red Crescent", "UNICEF",
             "the African Union", "Interpol", "the IMF", "Greenpeace", "NATO", "the WHO", "Real Madrid", "Ajax",
             "the Senate", "Reuters"]
MISC = ["Olympic", "French", "Nobel Prize", "Kenyan", "Japanese", "World Cup", "Euro", "Norwegian", "Georgian",
        "Brazilian", "Davis Cup", "Peruvian", "Tour de France", "Grammy", "Swedish", "Ramadan", "Polish",
        "Christmas", "Ghanaian", "Booker Prize", "Chilean", "Super Bowl", "Finnish", "Emmy", "Vietnamese",
        "Champions League", "Turkish", "Cuban", "Wimbledon", "Irish", "Danish", "Hungarian"]
AMBIGUOUS = {"PER": ["Florence", "Jordan", "Georgia Banks", "Sydney Clark"], "LOC": ["Florence", "Jordan",
             "Georgia", "Sydney"], "ORG": ["Florence Group", "Cairo Motors", "Lima Partners"]}

OPENINGS = ["", "", "", "", "On Monday ,", "Late on Friday ,", "Meanwhile ,", "According to officials ,",
            "Earlier this year ,", "In a statement ,", "By contrast ,", "As expected ,"]
ENDINGS = [".", ".", ".", ".", ", sources said .", ", officials added .", "on Tuesday .", "last week .",
           ", according to reports .", "!"]
TEMPLATES = [  # {OPEN}/{END}: optional opening and ending; the last HELD_OUT are never in train
    "{OPEN} {PER} visited {LOC} {END}",
    "{OPEN} {PER} works for {ORG} in {LOC} {END}",
    "{OPEN} {ORG} opened a new office in {LOC} {END}",
    "The {MISC} delegation met {PER} at {ORG} {END}",
    "{PER} said {ORG} would expand to {LOC} next year {END}",
    "Shares of {ORG} rose 3 percent after {PER} spoke {END}",
    "{PER} won the {MISC} final in {LOC} {END}",
    "In {LOC} , {PER} and {PER} signed a deal with {ORG} {END}",
    "{ORG} and {ORG} agreed to merge , {PER} told reporters .",
    "A {MISC} team arrived in {LOC} {END}",
    "Rain delayed the match between {ORG} and {ORG} {END}",
    "{PER} left {LOC} for {LOC} {END}",
    "{OPEN} officials said the talks were constructive {END}",
    "{PER} met {PER} in {LOC} {END}",
    "{LOC} beat {LOC} 2-1 in the {MISC} qualifier {END}",
    "Analysts at {ORG} expect growth in {LOC} {END}",
    "The report by {ORG} was published in {LOC} {END}",
    "\" We are very pleased , \" said {PER} , chief executive of {ORG} .",
    "{PER} , 34 , joined {ORG} from {ORG} in 2019 {END}",
    "{OPEN} prices fell sharply in {LOC} and {LOC} {END}",
    "{ORG} ( {LOC} ) reported a loss of 12 million dollars {END}",
    "{OPEN} the {MISC} champion {PER} withdrew with an injury {END}",
    "{PER} 's new book is set in {LOC} {END}",
    "{OPEN} {PER} was appointed head of {ORG} {END}",
    "{OPEN} nobody expected the vote to pass {END}",
    "Fans of {ORG} gathered outside the stadium in {LOC} {END}",
    "{OPEN} a spokesman for {ORG} declined to comment {END}",
    "{PER} and {PER} will meet {ORG} leaders in {LOC} {END}",
    "{OPEN} flights between {LOC} and {LOC} were cancelled {END}",
    "the {MISC} ambassador to {LOC} , {PER} , resigned {END}",
    "{OPEN} {ORG} hired {PER} as an adviser {END}",
    "Coach {PER} praised the {MISC} players after the game {END}",
    "{OPEN} the index closed at 4,213 points {END}",
    "{PER} flew to {LOC} to watch the {MISC} {END}",
    "Police in {LOC} arrested two men on Sunday {END}",
    # held out: only in dev and test
    "{OPEN} talks with {ORG} collapsed , said {PER} in {LOC} {END}",
    "Thousands marched through {LOC} to support {PER} {END}",
    "{OPEN} {ORG} confirmed that {PER} would step down {END}",
    "Visitors to {LOC} rarely see the {MISC} festival {END}",
    "{OPEN} the deal gives {ORG} control of a port near {LOC} {END}",
]
HELD_OUT = 5


def deal(items: list[str], rng: random.Random, shares=(0.6, 0.2, 0.2)) -> dict[str, list[str]]:
    """Shuffle ``items`` and cut them into disjoint train/dev/test lists."""
    items = items[:]
    rng.shuffle(items)
    a = round(shares[0] * len(items))
    b = a + round(shares[1] * len(items))
    return {"train": items[:a], "dev": items[a:b], "test": items[b:]}


def pools(rng: random.Random) -> dict[str, dict[str, list[str]]]:
    """Per split, per type, the mentions to draw from; mentions (and person and place words) never shared."""
    first, last, places = deal(FIRST, rng), deal(LAST, rng), deal(PLACES, rng)
    regions, heads, fixed, misc = deal(REGIONS, rng), deal(ORG_HEADS, rng), deal(ORG_FIXED, rng), deal(MISC, rng)
    out = {}
    for split in ("train", "dev", "test"):
        per = [f"{f} {ln}" for f in first[split] for ln in last[split]] + first[split][:4] + last[split][:3]
        orgs = [f"{h} {t}" for h in heads[split] for t in ORG_TAILS] + fixed[split] + [
            f"{p} {t}" for p in places[split][:4] for t in ("Bank", "United", "University")]
        out[split] = {"PER": per, "LOC": places[split] + regions[split], "ORG": orgs, "MISC": misc[split]}
    for label, names in AMBIGUOUS.items():  # ambiguous words: training only (they teach that context matters)
        out["train"][label] = out["train"][label] + names
    return out


def fill(template: str, pool: dict[str, list[str]], rng: random.Random) -> tuple[list[str], list[str]]:
    tokens, tags = [], []
    template = template.replace("{OPEN}", rng.choice(OPENINGS)).replace("{END}", rng.choice(ENDINGS))
    for piece in template.split():
        if piece.startswith("{") and piece.endswith("}"):
            label = piece[1:-1]
            words = rng.choice(pool[label]).split()
            tokens += words
            tags += [f"B-{label}"] + [f"I-{label}"] * (len(words) - 1)
        else:
            tokens.append(piece)
            tags.append("O")
    if tokens and tags[0] == "O" and tokens[0][0].islower() and rng.random() < 0.8:
        tokens[0] = tokens[0][0].upper() + tokens[0][1:]  # mostly capitalised; a few sentences stay lower-case
    return tokens, tags


def main(out: Path | None = None):
    rng = random.Random(2026)
    split_pools = pools(rng)
    out = out or Path(__file__).resolve().parents[1] / "ner_zoo" / "data" / "sample"
    seen: set[tuple[str, ...]] = set()
    for split, n in SPLITS:
        templates = TEMPLATES[:-HELD_OUT] if split == "train" else TEMPLATES
        lines, made = [], 0
        while made < n:
            tokens, tags = fill(rng.choice(templates), split_pools[split], rng)
            if tuple(tokens) in seen:  # no sentence twice, in any split
                continue
            seen.add(tuple(tokens))
            if made % 20 == 0:
                lines += ["-DOCSTART- O", ""]
            lines += [f"{t} {g}" for t, g in zip(tokens, tags)] + [""]
            made += 1
        (out / f"{split}.conll").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
