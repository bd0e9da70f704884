"""Hermetic tests of the corpus readers, prediction writers and corpus statistics (tiny fixtures only).

HF_DATASETS_OFFLINE=1 is set by conftest.py; the Hugging Face tests only read files they write.
"""

from __future__ import annotations

import itertools
import json
import tempfile
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ner_zoo.data.readers import (
    READERS,
    read_conll,
    read_conll_with_scheme,
    read_nested_json,
    read_prediction_conll,
    read_ptb,
    read_ptb_mrg,
    read_ptb_pos,
)
from ner_zoo.data.schema import Sentence, Span
from ner_zoo.data.stats import corpus_stats, format_stats
from ner_zoo.data.tagging import TagScheme, spans_to_tags, tags_to_spans
from ner_zoo.data.writers import read_prediction_jsonl, write_conll, write_jsonl
from ner_zoo.io import atomic_write
from ner_zoo.errors import DataFormatError

FIX = Path(__file__).parent / "fixtures"


def write(tmp_path: Path, text: str | bytes, name: str = "f.txt") -> Path:
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return p


# --- CoNLL ------------------------------------------------------------------------------------------------
def test_conll_iob1_documents_columns_and_sources():
    path = FIX / "conll_iob1_docs.txt"
    sents = read_conll(path, columns={"pos": 1, "chunk": 2})
    assert [s.tokens[0] for s in sents] == ["Anna", "Tom", "Quiet", "Acme"]
    assert sents.scheme is TagScheme.IOB1
    assert sents[0].spans == [Span(0, 2, "PER"), Span(3, 4, "LOC")]
    assert sents[1].spans == [Span(0, 1, "PER"), Span(1, 2, "PER")]  # B- splits two adjacent PERs
    assert sents[2].spans == [] and sents[3].spans == [Span(0, 2, "ORG")]
    name = path.name
    assert [(s.doc_id, s.index) for s in sents] == [(f"{name}:0", 0), (f"{name}:0", 1), (f"{name}:1", 0),
                                                   (f"{name}:1", 1)]
    assert [s.source for s in sents] == [f"{path}:{n}" for n in (3, 9, 16, 19)]
    assert sents[0].columns == {"pos": ["NNP", "NNP", "VBD", "NNP", "."],
                                "chunk": ["B-NP", "I-NP", "B-VP", "B-NP", "O"]}
    for s in sents:
        s.validate(flat=True)


def test_conll_tabs_bioes_blank_runs_and_whitespace_lines():
    sents = read_conll(FIX / "bioes_tabs.tsv")
    assert sents.scheme is TagScheme.BIOES
    assert [s.tokens for s in sents] == [["Rita", "Soto", "flew", "to", "Lima"], ["No", "entities"],
                                         ["here", "New", "York", "City"]]
    assert sents[0].spans == [Span(0, 2, "PER"), Span(4, 5, "LOC")]
    assert sents[2].spans == [Span(1, 4, "LOC")]
    # no separators: every sentence its own document, unless single_doc
    assert [s.doc_id for s in sents] == [f"bioes_tabs.tsv:{i}" for i in range(3)]
    one = read_conll(FIX / "bioes_tabs.tsv", single_doc=True)
    assert {s.doc_id for s in one} == {"bioes_tabs.tsv:0"} and [s.index for s in one] == [0, 1, 2]
    with pytest.raises(DataFormatError, match=r"bioes_tabs\.tsv:7: empty sentence"):
        read_conll(FIX / "bioes_tabs.tsv", raise_on_empty_sentence=True)


def test_conll_runs_of_spaces_iob2_and_scheme_override():
    sents, scheme = read_conll_with_scheme(FIX / "iob2_spaces.txt", columns={"pos": 1})
    assert scheme is TagScheme.IOB2 and sents.scheme is TagScheme.IOB2
    assert sents[0].spans == [Span(0, 2, "PER"), Span(4, 5, "LOC")] and sents[1].columns["pos"][1] == "NC"
    forced = read_conll(FIX / "iob2_spaces.txt", scheme="bilou")
    assert forced.scheme is TagScheme.BIOES and [s.spans for s in forced] == [s.spans for s in sents]


def test_conll_i_after_o_opens_an_entity(tmp_path):
    p = write(tmp_path, "a O\nb I-PER\nc I-ORG\nd B-ORG\n")
    assert read_conll(p)[0].spans == [Span(1, 2, "PER"), Span(2, 3, "ORG"), Span(3, 4, "ORG")]


def test_conll_crlf_bom_and_latin1(tmp_path):
    lf = read_conll(FIX / "iob2_spaces.txt")
    crlf = write(tmp_path, (FIX / "iob2_spaces.txt").read_bytes().replace(b"\n", b"\r\n"), "crlf.txt")
    got = read_conll(crlf)
    assert [(s.tokens, s.spans) for s in got] == [(s.tokens, s.spans) for s in lf]
    bom = read_conll(write(tmp_path, b"\xef\xbb\xbfJos\xc3\xa9 B-PER\n", "bom.txt"))
    assert bom[0].tokens == ["José"] and bom.encoding == "utf-8"
    latin = write(tmp_path, "Espa\xf1a B-LOC\nes O\n\nA\xa0b O\n".encode("latin-1"), "latin.txt")
    with pytest.warns(UnicodeWarning, match=r"latin\.txt:1: byte 0xf1 is not UTF-8"):
        sents = read_conll(latin)
    assert sents.encoding == "latin-1" and sents[0].tokens == ["España", "es"]
    assert sents[1].tokens == ["A\xa0b"]  # a no-break space is not a column separator
    with pytest.raises(DataFormatError, match=r"latin\.txt:1: cannot decode byte 0xf1 as utf-8"):
        read_conll(latin, encoding="utf-8")


@pytest.mark.parametrize("tag", ["B-", "X-PER", "PER", "b-PER"])
def test_conll_bad_tag_names_file_and_line(tmp_path, tag):
    p = write(tmp_path, f"a O\nb B-PER\n\nc O\nd {tag}\n")
    with pytest.raises(DataFormatError, match=rf"f\.txt:5: invalid tag '{tag}'"):
        read_conll(p)


def test_conll_column_count_errors(tmp_path):
    p = write(tmp_path, "a NN O\nb NN O\n\nc O\n")
    with pytest.raises(DataFormatError, match=r"f\.txt:4: line has 2 columns, expected 3 as on line 1"):
        read_conll(p)
    loose = read_conll(p, strict_columns=False)
    assert [s.tokens for s in loose] == [["a", "b"], ["c"]]
    with pytest.raises(DataFormatError, match=r"f\.txt:4: column 'pos' 2 does not exist"):
        read_conll(p, strict_columns=False, columns={"pos": 2})
    with pytest.raises(DataFormatError, match=r"f\.txt:1: label_column 5 does not exist"):
        read_conll(p, label_column=5)
    tabs = write(tmp_path, "a\tO\nb O\n", "tabs.txt")  # a space-separated line in a tab file
    with pytest.raises(DataFormatError, match=r"tabs\.txt:2: line has 1 columns"):
        read_conll(tabs)


def test_conll_empty_files(tmp_path):
    for text in ["", "\n\n  \n", "-DOCSTART- -X- O O\n\n"]:
        p = write(tmp_path, text)
        with pytest.raises(DataFormatError, match="no sentences"):
            read_conll(p)
        assert read_conll(p, allow_empty=True) == []


def test_missing_files_and_folders(tmp_path):
    with pytest.raises(DataFormatError, match=r"nope\.txt: file not found"):
        read_conll(tmp_path / "nope.txt")
    with pytest.raises(DataFormatError, match=r"no files matching '\*\.mrg'"):
        read_ptb_mrg(tmp_path)
    with pytest.raises(DataFormatError, match="only .mrg or only .pos"):
        read_ptb([FIX / "tiny.mrg", FIX / "tiny.pos"])


def test_conll_docstart_with_any_column_count_and_custom_separators(tmp_path):
    p = write(tmp_path, "-DOCSTART-\n\na x O\n\n-DOCSTART- -X- -X- -X- O\nb y B-LOC\n\n-DOCSTART- O\n\nc z O\n")
    sents = read_conll(p)
    assert [s.tokens for s in sents] == [["a"], ["b"], ["c"]]
    assert [s.doc_id for s in sents] == ["f.txt:0", "f.txt:1", "f.txt:2"] and sents[1].spans == [Span(0, 1, "LOC")]
    # sentences before the first separator form document 0
    q = write(tmp_path, "a O\n\n###MEDLINE:17\n\nb O\n\nc O\n", "med.txt")
    sents = read_conll(q, doc_separator=("-DOCSTART-", "###MEDLINE:"))
    assert [(s.doc_id, s.index) for s in sents] == [("med.txt:0", 0), ("med.txt:1", 0), ("med.txt:1", 1)]


def test_conll_unlabelled(tmp_path):
    p = write(tmp_path, "Hello\nworld\n\nBye\n")
    sents = read_conll(p, label_column=None)
    assert [s.tokens for s in sents] == [["Hello", "world"], ["Bye"]]
    assert all(s.spans == [] for s in sents) and sents.scheme is None


# --- nested JSON ------------------------------------------------------------------------------------------
def test_genia_shape():
    sents = read_nested_json(FIX / "genia_shape.jsonl")
    assert sents.notes == {"shape": "genia", "duplicates_dropped": 0}
    assert sents[0].spans == [Span(0, 2, "DNA"), Span(0, 1, "protein"), Span(4, 6, "cell_type")]
    doc = "genia_shape.jsonl:MEDLINE:"  # prefixed with the file name: ids are unique per file
    assert [(s.doc_id, s.index) for s in sents] == [(doc + "1", 0), (doc + "1", 1), (doc + "2", 0)]
    assert sents[2].source == f"{FIX / 'genia_shape.jsonl'}#3"
    assert sents[0].is_nested


def test_dygie_shape_inclusive_global_offsets_become_local_exclusive():
    sents = read_nested_json(FIX / "dygie_shape.json")
    assert sents.notes["shape"] == "dygie"
    assert sents[0].spans == [Span(0, 4, "PER"), Span(3, 4, "GPE")]  # "the mayor of Rome", "Rome"
    assert sents[1].spans == [Span(0, 1, "GPE")]  # document offset 5 is the second sentence's first token
    assert sents[2].spans == [Span(1, 3, "VEH")]  # offsets restart in each document
    assert [(s.doc_id, s.index) for s in sents] == [("dygie_shape.json:docA", 0), ("dygie_shape.json:docA", 1),
                                                   ("dygie_shape.json:docB", 0)]
    assert [" ".join(s.tokens[a:b]) for s in sents for a, b, _ in s.spans] == [
        "the mayor of Rome", "Rome", "Rome", "blue car"]


def test_json_document_ids_are_unique_per_file(tmp_path):
    """ACE files give every sentence of every split doc_key 0: the ids of two files must still differ."""
    record = {"doc_key": 0, "sentences": [["a"], ["b"]], "ner": [[], []]}
    ids = set()
    for split in ("train", "dev"):
        path = write(tmp_path, json.dumps(record) + "\n", f"{split}.json")
        ids |= {s.doc_id for s in read_nested_json(path)}
    genia = write(tmp_path, json.dumps({"tokens": ["a"], "entity_mentions": [], "doc_id": 0}) + "\n", "g.jsonl")
    assert ids == {"train.json:0", "dev.json:0"} and read_nested_json(genia)[0].doc_id == "g.jsonl:0"


def test_ace_context_stays_inside_real_documents_and_pseudo_documents_give_none(tmp_path):
    """Review F3: an ACE file that packs its split into one record (a pseudo-document) gives no context; a file
    with one record per document gives each sentence neighbours of its own document only."""
    from ner_zoo.data.corpora import ACE2005
    from ner_zoo.modules.transformer import DocumentContext

    packed = {"doc_key": 0, "sentences": [["a"], ["b"], ["c"]], "ner": [[], [], []]}
    docs = [{"doc_key": k, "sentences": [[f"{k}1"], [f"{k}2"]], "ner": [[], []]} for k in ("x", "y")]
    for name, records in (("packed", [packed]), ("docs", docs)):
        (tmp_path / name).mkdir()
        for split in ("train", "dev", "test"):
            (tmp_path / name / f"{split}.json").write_text("".join(json.dumps(r) + "\n" for r in records))
    dm = ACE2005(data_dir=str(tmp_path / "packed"))
    train = dm.sentences("train")
    left, right = DocumentContext(train).get(train, 1)
    assert left == right == [[], [], []] and "pseudo-document" in dm.notes["documents"]
    dm = ACE2005(data_dir=str(tmp_path / "docs"))
    train = dm.sentences("train")
    left, right = DocumentContext(train).get(train, 1)
    assert left == [[], ["x1"], [], ["y1"]] and right == [["x2"], [], ["y2"], []] and "documents" not in dm.notes


def test_lal_shape_list_and_lines(tmp_path):
    sents = read_nested_json(FIX / "lal_shape.json")
    assert sents.notes["shape"] == "lal"
    assert sents[0].spans == [Span(0, 1, "PER"), Span(4, 5, "ORG"), Span(3, 6, "FAC")]
    assert sents[0].columns["pos"][0] == "NNP" and sents[2].columns == {}
    # the second record's left context is the first record: same document
    assert [(s.doc_id, s.index) for s in sents] == [("lal_shape.json:0", 0), ("lal_shape.json:0", 1),
                                                   ("lal_shape.json:1", 0)]
    records = json.loads((FIX / "lal_shape.json").read_text())
    lines = write(tmp_path, "\n".join(json.dumps(r) for r in records) + "\n", "lal.jsonl")
    again = read_nested_json(lines, shape="locate_and_label")
    assert [(s.tokens, s.spans) for s in again] == [(s.tokens, s.spans) for s in sents]


@pytest.mark.parametrize("line, message", [
    ('{"tokens": ["a", "b"], "entity_mentions": [{"start": 1, "end": 3, "entity_type": "X"}]}',
     r"#2: span \(1, 3, 'X'\) is out of range for 2 tokens"),
    ('{"tokens": ["a", "b"], "entity_mentions": [{"start": 1, "end": 1, "entity_type": "X"}]}',
     r"#2: span \(1, 1, 'X'\) ends before it starts"),
    ('{"tokens": ["a", "b"], "entity_mentions": [{"start": 0, "entity_type": "X"}]}', r"#2: missing key 'end'"),
    ('{"tokens": [], "entity_mentions": []}', r"#2: empty sentence"),
    ('{"tokens": ["a"], "entity_mentions": [}', r"f\.jsonl:2: invalid JSON"),
])
def test_nested_json_errors_name_the_record(tmp_path, line, message):
    good = '{"tokens": ["a"], "entity_mentions": []}'
    p = write(tmp_path, good + "\n" + line + "\n", "f.jsonl")
    with pytest.raises(DataFormatError, match=message):
        read_nested_json(p)


def test_nested_json_shape_errors(tmp_path):
    with pytest.raises(DataFormatError, match=r"#1: unknown JSON shape \(keys: \['text'\]\)"):
        read_nested_json(write(tmp_path, '{"text": "a b"}\n', "u.json"))
    with pytest.raises(DataFormatError, match="unknown shape 'brat'"):
        read_nested_json(FIX / "genia_shape.jsonl", shape="brat")
    bad = write(tmp_path, '{"sentences": [["a"], ["b"]], "ner": [[[0, 1, "X"]], []]}\n', "d.json")
    with pytest.raises(DataFormatError, match=r"d\.json#1/0 \(document offsets 0\.\.1 inclusive.*out of range"):
        read_nested_json(bad)
    short = write(tmp_path, '{"sentences": [["a"], ["b"]], "ner": [[]]}\n', "s.json")
    with pytest.raises(DataFormatError, match="2 sentences but 1 'ner' lists"):
        read_nested_json(short)


def test_nested_json_duplicate_policies(tmp_path):
    p = write(tmp_path, '{"tokens": ["a", "b"], "entity_mentions": [{"start": 0, "end": 1, "entity_type": "X"}, '
                        '{"start": 0, "end": 1, "entity_type": "X"}, {"start": 0, "end": 1, "entity_type": "Y"}]}\n')
    with pytest.warns(UserWarning, match="dropped 1 duplicate"):
        sents = read_nested_json(p)
    assert sents[0].spans == [Span(0, 1, "X"), Span(0, 1, "Y")] and sents.notes["duplicates_dropped"] == 1
    with pytest.raises(DataFormatError, match=r"#1: duplicate span \(0, 1, 'X'\)"):
        read_nested_json(p, duplicates="raise")
    assert len(read_nested_json(p, duplicates="keep")[0].spans) == 3


# --- Penn Treebank ----------------------------------------------------------------------------------------
def test_ptb_mrg_drops_traces():
    sents = read_ptb_mrg(FIX / "tiny.mrg")
    assert [s.tokens for s in sents] == [["Ada", "Lovelace", "wrote", "the", "note", "mattered", "."],
                                         ["It", "is", "-LRB-", "old", "-RRB-", "."]]
    assert sents[0].columns["pos"] == ["NNP", "NNP", "VBD", "DT", "NN", "VBD", "."]
    assert [(s.doc_id, s.index, s.spans) for s in sents] == [("tiny", 0, []), ("tiny", 1, [])]
    assert sents[1].source == f"{FIX / 'tiny.mrg'}:9"
    assert read_ptb(FIX / "tiny.mrg")[0].tokens == sents[0].tokens


def test_ptb_mrg_errors(tmp_path):
    with pytest.raises(DataFormatError, match=r"a\.mrg:2: 1 unclosed"):
        read_ptb_mrg(write(tmp_path, "\n( (S (NN a) )\n", "a.mrg"))
    with pytest.raises(DataFormatError, match=r"b\.mrg:1: unbalanced"):
        read_ptb_mrg(write(tmp_path, "( (NN a) ))\n", "b.mrg"))
    with pytest.raises(DataFormatError, match=r"c\.mrg:1: tree without words"):
        read_ptb_mrg(write(tmp_path, "( (S (-NONE- *) ))\n", "c.mrg"))


def test_ptb_pos_sentences_brackets_and_escapes(tmp_path):
    sents = read_ptb_pos(FIX / "tiny.pos")
    assert [s.tokens for s in sents] == [["Ada", "Lovelace", "wrote", "the", "note", "mattered", "."],
                                         ["1/2", "is", "a", "half", "."], ["Headline", ":"]]
    assert sents[2].columns["pos"] == ["NN", ":"] and sents[2].source == f"{FIX / 'tiny.pos'}:13"
    assert read_ptb(FIX / "tiny.pos")[1].tokens[0] == "1/2"
    with pytest.raises(DataFormatError, match=r"x\.pos:1: item 'word' is not word/TAG"):
        read_ptb_pos(write(tmp_path, "word ./.\n", "x.pos"))


# --- Hugging Face -----------------------------------------------------------------------------------------
def test_read_hf_local_parquet_and_saved_dataset(tmp_path):
    datasets = pytest.importorskip("datasets")
    from ner_zoo.data.readers import read_hf

    names = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    feats = datasets.Features({"tokens": datasets.List(datasets.Value("string")),
                               "ner_tags": datasets.List(datasets.ClassLabel(names=names)),
                               "pos": datasets.List(datasets.Value("string"))})
    ds = datasets.Dataset.from_dict({"tokens": [["Ann", "Lee", "ran"], ["in", "Rome"]],
                                     "ner_tags": [[1, 2, 0], [0, 3]], "pos": [["N", "N", "V"], ["P", "N"]]},
                                    features=feats)
    ds.to_parquet(str(tmp_path / "d.parquet"))
    sents = read_hf(tmp_path / "d.parquet", split="dev", columns={"pos": "pos"}, cache_dir=str(tmp_path / "c"))
    assert [s.spans for s in sents] == [[Span(0, 2, "PER")], [Span(1, 2, "LOC")]]
    assert sents.scheme is TagScheme.IOB2 and sents[1].columns["pos"] == ["P", "N"]
    ds.save_to_disk(str(tmp_path / "saved"))
    again = read_hf(tmp_path / "saved")
    assert [(s.tokens, s.spans) for s in again] == [(s.tokens, s.spans) for s in sents]
    with pytest.raises(DataFormatError, match="no field 'labels'"):
        read_hf(tmp_path / "saved", tags_field="labels")


def test_read_hf_string_and_unnamed_integer_tags(tmp_path):
    pytest.importorskip("datasets")
    from ner_zoo.data.readers import read_hf

    p = tmp_path / "d.jsonl"
    p.write_text(json.dumps({"tokens": ["a", "b"], "tags": ["S-X", "O"], "ids": [1, 0]}) + "\n")
    sents = read_hf(p, tags_field="tags", cache_dir=str(tmp_path / "c"))
    assert sents[0].spans == [Span(0, 1, "X")] and sents.scheme is TagScheme.BIOES
    with pytest.raises(DataFormatError, match="no ClassLabel names"):
        read_hf(p, tags_field="ids", cache_dir=str(tmp_path / "c"))
    assert read_hf(p, tags_field="ids", tag_names=["O", "B-Y"], cache_dir=str(tmp_path / "c"))[0].spans == [
        Span(0, 1, "Y")]


# --- writers ----------------------------------------------------------------------------------------------
def _sample() -> tuple[list[Sentence], list[list[Span]]]:
    sents = list(read_conll(FIX / "conll_iob1_docs.txt"))
    preds = [[Span(0, 2, "PER")], [Span(0, 2, "PER")], [], [Span(0, 1, "ORG"), Span(1, 2, "ORG")]]
    return sents, preds


@pytest.mark.parametrize("scheme", ["iob1", "iob2", "bioes"])
def test_write_conll_round_trip(tmp_path, scheme):
    sents, preds = _sample()
    out = tmp_path / "pred.conll"
    write_conll(out, sents, preds, scheme=scheme, doc_separators=True)
    gold_tags, pred_tags = read_prediction_conll(out)
    assert [tags_to_spans(t) for t in gold_tags] == [s.spans for s in sents]
    assert [tags_to_spans(t) for t in pred_tags] == preds
    back = read_conll(out, label_column=1)  # the file is itself a CoNLL corpus with documents
    assert [(s.tokens, s.spans, s.doc_id, s.index) for s in back] == [
        (s.tokens, s.spans, s.doc_id.replace("conll_iob1_docs.txt", "pred.conll"), s.index) for s in sents]
    assert back.scheme is TagScheme.parse(scheme)


def test_write_conll_without_gold_and_bad_input(tmp_path):
    sents = [Sentence(["a b", ""], []), Sentence(["c"], [])]
    with pytest.warns(UserWarning, match="2 tokens contained whitespace"):
        write_conll(tmp_path / "p.txt", sents, [[Span(0, 1, "X")], []])
    assert (tmp_path / "p.txt").read_text() == "a_b B-X\n_ O\n\nc O\n\n"
    with pytest.raises(DataFormatError, match="cannot be scored"):
        read_prediction_conll(tmp_path / "p.txt")
    with pytest.raises(DataFormatError, match="overlaps"):
        write_conll(tmp_path / "q.txt", sents[:1], [[Span(0, 2, "X"), Span(1, 2, "Y")]])
    with pytest.raises(ValueError, match="2 sentences but 1"):
        write_conll(tmp_path / "q.txt", sents, [[]])
    bad = write(tmp_path, "a O O\nb O I-\n")
    with pytest.raises(DataFormatError, match=r"f\.txt:2: invalid tag 'I-'"):
        read_prediction_conll(bad)


def test_write_jsonl_round_trip_with_nested_spans_and_scores(tmp_path):
    sents = list(read_nested_json(FIX / "genia_shape.jsonl"))
    preds = [[Span(0, 2, "DNA"), Span(0, 1, "protein")], [], [Span(1, 2, "protein")]]
    write_jsonl(tmp_path / "p.jsonl", sents, preds, scores=[[0.9, 0.5], [], [0.1]])
    gold, pred = read_prediction_jsonl(tmp_path / "p.jsonl")
    assert gold == [s.spans for s in sents] and pred == preds
    first = json.loads((tmp_path / "p.jsonl").read_text().splitlines()[0])
    assert first["pred_scores"] == [0.9, 0.5] and first["doc_id"] == "genia_shape.jsonl:MEDLINE:1" and first["index"] == 0
    (tmp_path / "bad.jsonl").write_text('{"tokens": ["a"], "gold_spans": [[0, 2, "X"]], "pred_spans": []}\n')
    with pytest.raises(DataFormatError, match=r"bad\.jsonl:1.*out of range for 1 tokens"):
        read_prediction_jsonl(tmp_path / "bad.jsonl")


def test_atomic_write_keeps_old_file_on_failure(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old\n")
    with pytest.raises(RuntimeError), atomic_write(target, overwrite=True) as f:
        f.write("half")
        raise RuntimeError("crash while writing")
    assert target.read_text() == "old\n" and sorted(tmp_path.iterdir()) == [target]
    sents, preds = _sample()
    with pytest.raises(DataFormatError):  # overlapping predictions fail midway: nothing replaced
        write_conll(target, sents, preds[:-1] + [[Span(0, 2, "X"), Span(1, 2, "Y")]], overwrite=True)
    assert target.read_text() == "old\n" and sorted(tmp_path.iterdir()) == [target]


# --- statistics -------------------------------------------------------------------------------------------
def test_corpus_stats_counts_nesting_and_crossing():
    s1 = Sentence(list("abcdef"), [Span(0, 4, "A"), Span(1, 2, "B"), Span(3, 6, "C"), Span(1, 2, "D")], doc_id="d")
    s2 = Sentence(list("xy"), [Span(0, 1, "A")], doc_id="d", index=1)
    st_ = corpus_stats({"train": [s1, s2], "test": []})["train"]
    assert st_["sentences"] == 2 and st_["tokens"] == 8 and st_["documents"] == 1 and st_["entities"] == 5
    assert st_["entities_per_type"] == {"A": 2, "B": 1, "C": 1, "D": 1}
    assert st_["nested_entities"] == 3 and st_["inner_entities"] == 2 and st_["crossing_pairs"] == 1
    assert st_["nested_ratio"] == pytest.approx(3 / 5) and st_["longest_entity"] == 4
    table = format_stats(corpus_stats({"train": [s1, s2], "test": []}))
    assert "| train | 2 | 8 | 1 | 5 | 60.0 | 2 | 1 | 4 | 6 |" in table and "| D | 1 | 0 |" in table


def test_readers_registry():
    assert set(READERS) >= {"conll", "nested_json", "ptb", "hf"}


# --- properties -------------------------------------------------------------------------------------------
@st.composite
def flat_spans(draw, max_len: int = 12):
    n = draw(st.integers(1, max_len))
    cuts = sorted(draw(st.sets(st.integers(0, n), max_size=n + 1)))
    spans, labels = [], st.sampled_from(["PER", "LOC", "creative-work", "cell_type"])
    for a, b in itertools.pairwise(cuts):
        if draw(st.booleans()):
            spans.append(Span(a, b, draw(labels)))
    return n, spans


@settings(max_examples=150, deadline=None)
@given(flat_spans(), st.sampled_from(list(TagScheme)))
def test_spans_tags_spans_identity(case, scheme):
    n, spans = case
    assert tags_to_spans(spans_to_tags(spans, n, scheme)) == spans


@settings(max_examples=40, deadline=None)
@given(st.lists(flat_spans(), min_size=1, max_size=4), st.sampled_from(list(TagScheme)))
def test_written_conll_reads_back_identically(cases, scheme):
    sents = [Sentence([f"w{i}" for i in range(n)], spans) for n, spans in cases]
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "x.conll"
        write_conll(path, sents, [s.spans for s in sents], scheme=scheme, with_gold=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            back = read_conll(path, label_column=1, scheme=scheme)
    assert [s.spans for s in back] == [s.spans for s in sents]


def test_genia_xml_sentence_tokens_and_nested_terms(tmp_path):
    """GPML: terms become spans over tokens split at term boundaries; untyped and coordinated terms drop."""
    from ner_zoo.data.readers.genia_xml import finkel_manning_split, read_genia_xml

    sentence = ('<sentence>Activation of <cons sem="G#protein_family_or_group"><cons sem="G#protein_molecule">'
                'CD28</cons> receptor</cons> in <cons sem="G#cell_type">(T cells)</cons>, <cons sem="G#other_name">'
                'PHA</cons>-activated <cons sem="(AND G#protein_molecule G#protein_molecule)">x</cons>.</sentence>')
    articles = "".join(f'<article><articleinfo><bibliomisc>MEDLINE:{i % 9}</bibliomisc></articleinfo><title>'
                       f'{sentence}</title></article>' for i in range(10))
    path = tmp_path / "g.xml"
    path.write_text(f'<?xml version="1.0"?>\n<set>{articles}</set>')
    docs = read_genia_xml(path)
    s = docs[0][0]
    assert s.tokens == ["Activation", "of", "CD28", "receptor", "in", "(", "T", "cells", ")", ",", "PHA",
                        "-activated", "x", "."]
    assert [(sp.start, sp.end, sp.label) for sp in s.spans] == [(2, 3, "protein"), (2, 4, "protein"),
                                                                (5, 9, "cell_type")]
    assert docs[9][0].doc_id == "MEDLINE:0#2"  # a repeated article keeps its own document id
    sizes = [len(finkel_manning_split(path, k)) for k in ("train", "dev", "test")]
    assert sizes == [8, 1, 1]
