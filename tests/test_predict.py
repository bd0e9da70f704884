"""``ner-zoo predict`` (ner_zoo/cli/predict.py): input formats and encodings, pipes, option checks, output names;
nothing lost or silently misread."""

from __future__ import annotations

import json
import os

import pytest
import torch
from cli_cases import GENIA, LATIN, NESTED, OVERLAP, TRAIN, T, ner_zoo, one_error_line, predict, write


# --- 2, 3, 12: predict input and output -----------------------------------------------------------------------------
def test_piped_input_loses_no_sentence(fitted, tmp_path, capsys):
    import threading

    _, ckpt, _ = fitted
    sentences = [f"tok{i} B-PER\nsaid O\n" for i in range(1000)]  # ~18 KB: more than any sniffing buffer
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text("\n".join(sentences)))
    writer.start()
    out = tmp_path / "out.conll"
    rc, stdout, err = ner_zoo(capsys, "predict", "--ckpt_path", ckpt, "--input", fifo, "--output", out,
                              "--accelerator", "cpu")
    writer.join()
    assert rc == 0, err
    blocks = out.read_text().strip().split("\n\n")
    assert len(blocks) == 1000 and blocks[0].startswith("tok0 B-PER ") and "wrote 1000 sentences" in stdout


def test_predict_output_name_scheme_bom_txt_latin1_and_jsonl_lines(fitted, tmp_path, capsys):
    _, ckpt, _ = fitted
    inp = tmp_path / "eng.testb"
    inp.write_bytes(b"\xef\xbb\xbf" + b"Peter B-PER\nBlackburn I-PER\nsaid O\n\nEU B-ORG\n")  # IOB2, with a BOM
    rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", ckpt, "--input", inp, "--accelerator", "cpu")
    assert rc == 0, err
    rows = [ln.split() for ln in (tmp_path / "eng.testb.pred.conll").read_text().splitlines() if ln]
    assert rows[0][:2] == ["Peter", "B-PER"] and rows[3][:2] == ["EU", "B-ORG"]  # BOM gone, gold in IOB2
    assert not any(t.startswith(("S-", "E-")) for r in rows for t in r[1:])  # not BIOES
    columns = tmp_path / "columns.txt"  # CoNLL columns in a .txt file
    columns.write_text(TRAIN)
    rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", ckpt, "--input", columns, "--accelerator", "cpu")
    assert rc == 0 and (tmp_path / "columns.txt.pred.conll").read_text().startswith("EU B-ORG ")
    raw = tmp_path / "raw.txt"
    raw.write_bytes("José Müller\n\nvisited Paris\n".encode("latin-1"))
    with pytest.warns(UnicodeWarning, match=r"raw\.txt:1: byte 0xe9 is not UTF-8"):
        rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", ckpt, "--input", raw, "--output_format", "jsonl")
    assert rc == 0, err
    lines = [json.loads(ln) for ln in (tmp_path / "raw.txt.pred.jsonl").read_text().splitlines()]
    assert [x["tokens"] for x in lines] == [["José", "Müller"], ["visited", "Paris"]]
    assert [x["source"] for x in lines] == [f"{raw}:1", f"{raw}:3"]


# --- 10: vocabularies, unseen gold labels, overridden arguments ----------------------------------------------------
def test_gold_label_the_model_never_saw_does_not_block_prediction(fitted, tmp_path, capsys):
    _, ckpt, _ = fitted
    inp = tmp_path / "drug.conll"
    inp.write_text("Aspirin B-DRUG\nhelps O\n\n")
    rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", ckpt, "--input", inp, "--accelerator", "cpu")
    assert rc == 0, err
    assert (tmp_path / "drug.conll.pred.conll").read_text().split("\n")[0].split()[:2] == ["Aspirin", "B-DRUG"]


@pytest.mark.parametrize("option, message", [
    (["--batch_size", "0"], "expected a positive integer, got 0"),
    (["--batch_size", "-3"], "expected a positive integer, got -3"),
    (["--precision", "bogus"], "invalid choice: 'bogus'"),
    (["--accelerator", "gpu"], "no CUDA GPU is available"),
])
def test_predict_options_are_checked_before_loading(tmp_path, capsys, option, message):  # P-opt
    if option[0] == "--accelerator" and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    inp = write(tmp_path / "in.conll", T)
    rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", tmp_path / "no.ckpt", "--input", inp, *option)
    assert rc == 2 and message in one_error_line(err)  # refused before the (missing) checkpoint is opened


def test_latin1_hint_names_the_commands_own_option(fitted, tmp_path, capsys):  # P-mixed hint
    _, ckpt, _ = fitted
    f = write(tmp_path / "latin.conll", LATIN)
    with pytest.warns(UnicodeWarning, match=r"pass --encoding utf-8"):
        rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", ckpt, "--input", f, "--accelerator", "cpu")
    assert rc == 0, err
    out = (tmp_path / "latin.conll.pred.conll").read_text()
    assert out.startswith("José ") and "Müller" in out
    rc, _, err = ner_zoo(capsys, "score", f, "--encoding", "utf-8")
    assert rc == 2 and "cannot decode byte 0xe9 as utf-8" in one_error_line(err)


def test_predict_reads_crlf_bom_iob1_and_genia(fitted, tmp_path, capsys):  # P-crlf, P-bom, P-iob1, P-geniaok
    ckpt = fitted[1]
    for data, first in ((T.replace("\n", "\r\n"), "EU B-ORG "), ("\ufeff" + T, "EU B-ORG "),
                        (T.replace("B-", "I-"), "EU I-ORG ")):
        rc, _, err, out = predict(capsys, ckpt, write(tmp_path / "in.conll", data), "--overwrite")
        text = out.read_bytes()
        assert rc == 0 and b"\r" not in text and text.decode().startswith(first), (text[:40], err[-500:])
    rc, _, err, out = predict(capsys, ckpt, write(tmp_path / "g.jsonl", GENIA), "--output_format", "jsonl",
                              "--overwrite")
    rec = json.loads(out.read_text().splitlines()[0])
    assert rc == 0 and rec["gold_spans"] == [[0, 1, "ORG"]] and "pred_spans" in rec


@pytest.mark.parametrize("pid, data, needle", [
    ("P-overlap", OVERLAP, "overlaps another; tags can only encode flat spans"),
    ("P-nested", NESTED, "overlaps another; tags can only encode flat spans"),
    ("P-oor", '{"tokens": ["a", "b"], "entity_mentions": [{"start": 0, "end": 5, "entity_type": "PER"}]}\n',
     "is out of range for 2 tokens"),
    ("P-emptytok", '{"tokens": [], "entity_mentions": []}\n', "empty sentence"),
])
def test_predict_refuses_json_that_tags_cannot_hold(fitted, tmp_path, capsys, pid, data, needle):
    rc, _, err, out = predict(capsys, fitted[1], write(tmp_path / "in.jsonl", data), "--output_format", "conll")
    assert rc == 2 and needle in one_error_line(err) and not out.exists()


def test_predict_keeps_overlapping_gold_in_jsonl(fitted, tmp_path, capsys):  # P-overlap-jl, P-nested-jl
    for data in (OVERLAP, NESTED):
        rc, _, err, out = predict(capsys, fitted[1], write(tmp_path / "in.jsonl", data), "--output_format",
                                  "jsonl", "--overwrite")
        assert rc == 0 and len(json.loads(out.read_text())["gold_spans"]) == 2, err[-500:]


def test_predict_input_problems_are_one_line(fitted, tmp_path, capsys):  # P-pipe-noout, P-dash, P-inputdir
    ckpt = fitted[1]
    rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", ckpt, "--input", tmp_path)
    assert rc == 2 and "is a directory" in one_error_line(err)
    rc, _, err = ner_zoo(capsys, "predict", "--ckpt_path", ckpt, "--input", tmp_path / "nope.conll")
    assert rc == 2 and "nope.conll: file not found" in one_error_line(err)


# --- the reader never guesses silently (issue 43 item 3; probes R1, R3, R6 of robustness_4) ------------------------
def _tokens(out) -> list[str]:
    return [ln.split()[0] for ln in out.read_text().splitlines() if ln.strip()]


def test_a_conll_file_with_one_bad_line_is_an_error_at_that_line(fitted, tmp_path, capsys):  # R1
    _, ckpt, _ = fitted
    lines = TRAIN.split("\n")
    lines[6] = "Blackburn I-PER X"
    inp = write(tmp_path / "midcol.conll", "\n".join(lines))
    rc, _, err, out = predict(capsys, ckpt, inp)
    assert rc == 2 and f"{inp}:7: line has 3 columns, expected 2" in one_error_line(err) and not out.exists()
    lines[6] = "Blackburn went home"  # a line of text inside a CoNLL file
    inp = write(tmp_path / "midtext.conll", "\n".join(lines))
    rc, _, err, out = predict(capsys, ckpt, inp)
    assert rc == 2 and f"{inp}:7:" in one_error_line(err) and not out.exists()


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
def test_every_line_end_is_a_line_end(fitted, tmp_path, capsys, end):  # R3 (CR only), CRLF
    _, ckpt, _ = fitted
    inp = write(tmp_path / "in.conll", TRAIN.replace("\n", end).encode())
    rc, _, err, out = predict(capsys, ckpt, inp)
    assert rc == 0, err
    assert _tokens(out) == ["EU", "rejects", "German", "call", "Peter", "Blackburn", "said"]
    text = write(tmp_path / "in.txt", f"Anna Berg visited Paris.{end}Peter spoke.{end}".encode())
    rc, _, err, out = predict(capsys, ckpt, text, "--output_format", "jsonl", "--overwrite")
    assert rc == 0, err
    assert [json.loads(ln)["text"] for ln in out.read_text().splitlines()] == ["Anna Berg visited Paris.",
                                                                               "Peter spoke."]


def test_compressed_and_binary_input_is_refused_in_one_line(fitted, tmp_path, capsys):  # R6
    import bz2
    import gzip
    import lzma

    _, ckpt, _ = fitted
    for name, data, what in (("gold.conll.gz", gzip.compress(TRAIN.encode()), "gzip-compressed"),
                             ("gold.conll.bz2", bz2.compress(TRAIN.encode()), "bzip2-compressed"),
                             ("gold.conll.xz", lzma.compress(TRAIN.encode()), "xz-compressed"),
                             ("model.ckpt", b"PK\x03\x04" + bytes(200), "a zip archive"),
                             ("random.bin", bytes(range(256)) * 8, "control characters")):
        inp = write(tmp_path / name, data)
        for fmt in ("auto", "conll", "text", "jsonl"):
            rc, _, err, out = predict(capsys, ckpt, inp, "--input_format", fmt)
            assert rc == 2 and f"{inp}: binary input" in one_error_line(err) and what in err, (name, fmt, err)
            assert not out.exists()
        rc, _, err = ner_zoo(capsys, "data", "stats", "--files", f"train={inp}")  # the corpus readers too
        assert rc == 2 and f"{inp}: binary input" in one_error_line(err), err
    # a stray NUL or control character inside a text file is data, not binary
    inp = write(tmp_path / "nul.conll", TRAIN.replace("rejects", "rej\x00ects\x07"))
    rc, _, err, out = predict(capsys, ckpt, inp, "--overwrite")
    assert rc == 0, err


def test_bom_utf16_and_docstart_in_conll(fitted, tmp_path, capsys):
    _, ckpt, _ = fitted
    doc = "-DOCSTART- O\n\n" + TRAIN
    four = "-DOCSTART- -X- -X- O\n\n" + "".join(f"{ln.split()[0]} X Y {ln.split()[1]}\n" if ln else "\n"
                                                for ln in TRAIN.split("\n"))
    for name, data in (("bom.conll", ("\ufeff" + doc).encode()),
                       ("bomcrlf.conll", ("\ufeff" + doc).replace("\n", "\r\n").encode()),
                       ("u16.conll", doc.encode("utf-16")), ("u16be.conll", b"\xfe\xff" + doc.encode("utf-16-be")),
                       ("four.conll", four.encode())):
        inp = write(tmp_path / name, data)
        rc, _, err, out = predict(capsys, ckpt, inp, "--overwrite")
        assert rc == 0, (name, err)
        assert _tokens(out) == ["EU", "rejects", "German", "call", "Peter", "Blackburn", "said"], name


def test_the_detected_format_is_stated_and_input_format_chooses(fitted, tmp_path, capsys):
    _, ckpt, _ = fitted
    inp = write(tmp_path / "in.conll", TRAIN)
    rc, _, err, out = predict(capsys, ckpt, inp)
    assert rc == 0 and f"ner-zoo predict: reading {inp} as CoNLL columns (detected; --input_format" in err
    rc, _, err, out = predict(capsys, ckpt, inp, "--input_format", "text", "--overwrite", "--output_format", "jsonl")
    assert rc == 0 and "detected" not in err
    assert json.loads(out.read_text().splitlines()[0])["text"] == "EU B-ORG"  # read as the user said: text


def test_a_file_of_only_docstart_lines_is_conll_without_sentences(fitted, tmp_path, capsys):
    """It was sniffed as raw text and ``-DOCSTART- -X- O`` tagged as a sentence (rc 0)."""
    _, ckpt, _ = fitted
    for name, data in (("doc.conll", "-DOCSTART- -X- O\n\n"), ("bomdoc.txt", "\ufeff-DOCSTART- -X- O\r\n\r\n-DOCSTART-\r\n")):
        inp = write(tmp_path / name, data.encode())
        rc, _, err, out = predict(capsys, ckpt, inp)
        assert rc == 2 and f"{inp}: no sentences in file" in one_error_line(err) and not out.exists(), err


# --- every CoNLL reader over line ends, BOMs, encodings and -DOCSTART- lines (a generator, no model) -------------
DOCSTARTS = ["-DOCSTART-", "-DOCSTART- O", "-DOCSTART- -X- O", "-DOCSTART- -X- -X- O"]


def _conll_files():
    from hypothesis import strategies as st

    token = st.text(alphabet="abcXYZé東-.,", min_size=1, max_size=4).filter(lambda t: t != "-DOCSTART-")
    sentence = st.lists(st.tuples(token, st.sampled_from(["O", "B-PER", "B-LOC"])), min_size=1, max_size=4)
    return st.fixed_dictionaries({
        "sentences": st.lists(sentence, min_size=1, max_size=4),
        "docstart": st.lists(st.one_of(st.none(), st.sampled_from(DOCSTARTS)), min_size=4, max_size=4),
        "gap": st.integers(1, 3), "trailing": st.integers(0, 2), "end": st.sampled_from(["\n", "\r\n", "\r"]),
        "bom": st.booleans(), "encoding": st.sampled_from(["utf-8", "utf-16", "utf-16-be"]),
        "suffix": st.sampled_from([".conll", ".txt", ".tsv"]), "columns": st.integers(2, 3)})


def _render(f) -> bytes:
    blocks = []
    for i, sent in enumerate(f["sentences"]):
        if f["docstart"][i]:  # a document marker before sentence i
            blocks.append(f["docstart"][i])
        blocks.append("\n".join(f"{t} {tag}" + (f" {tag}" if f["columns"] == 3 else "") for t, tag in sent))
    text = ("\n" * (f["gap"] + 1)).join(blocks) + "\n" * f["trailing"]
    text = text.replace("\n", f["end"])
    if f["encoding"] == "utf-8":
        return ("\ufeff" if f["bom"] else "").encode() + text.encode()
    return ("\ufeff" + text).encode(f["encoding"])  # UTF-16 is read by its BOM


def test_every_conll_reader_reads_any_line_end_bom_encoding_and_docstart(tmp_path_factory):
    """predict's reader (sniffed and chosen), the corpus reader (``data stats``, training) and score's reader give
    the generated tokens and tags back, whatever the line ends, BOM, UTF-16 and ``-DOCSTART-`` lines."""
    from hypothesis import HealthCheck, given, settings

    from ner_zoo.cli.predict import read_input
    from ner_zoo.data.readers.conll import read_conll, read_prediction_conll
    from ner_zoo.data.tagging import spans_to_tags

    folder = tmp_path_factory.mktemp("conll_gen")

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(_conll_files())
    def check(f):
        path = folder / f"in{f['suffix']}"
        path.write_bytes(_render(f))
        tokens = [[t for t, _ in s] for s in f["sentences"]]
        tags = [[tag for _, tag in s] for s in f["sentences"]]
        for fmt in ("auto", "conll"):
            sents, labelled = read_input(path, fmt)
            assert labelled and [s.tokens for s in sents] == tokens, fmt
            assert [spans_to_tags(s.spans, len(s.tokens), "iob2", "") for s in sents] == tags
        corpus = read_conll(path)
        assert [s.tokens for s in corpus] == tokens
        if f["columns"] == 3:
            gold, pred, toks = read_prediction_conll(path, with_tokens=True)
            assert toks == tokens and gold == tags and pred == tags

    check()
