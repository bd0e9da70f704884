"""Using a trained model (issue 28): ``ner_zoo.load`` on raw text with offsets and scores, export with a model card,
``predict`` through pipes, and the commands that must start without Lightning.

One tiny BiLSTM-CRF is trained once per test process (``trained`` in conftest.py, a few seconds); fresh
interpreters check what a user runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from battery import build

ROOT = Path(__file__).resolve().parents[1]
from conftest import USE_DATA as DATA, USE_MODEL as MODEL  # the fixtures trained/exported (conftest.py) fit these


def run(*args: str, stdin: str | None = None, cwd: Path | None = None, code: int = 0) -> subprocess.CompletedProcess:
    """``python ARGS`` in a fresh interpreter (this checkout first on the path); its exit code must be ``code``."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, *args], input=stdin, capture_output=True, text=True, timeout=300,
                          cwd=cwd, env=env)
    assert done.returncode == code, done.stdout[-2000:] + done.stderr[-4000:]
    return done


def cli(*args: str, **kw) -> subprocess.CompletedProcess:
    return run("-m", "ner_zoo.cli.main", *args, **kw)


def messy_text(sentences) -> str:
    """Sample sentences as a user would paste them: odd spacing, quotes, tabs, line breaks and paragraphs."""
    parts = []
    for i, s in enumerate(sentences):
        line = ("  " if i % 3 == 0 else " ").join(s.tokens)
        parts.append(f'"{line}"' if i % 4 == 1 else line.replace(" , ", ", "))
    return "\n\n".join(" \t".join(parts[i:i + 2]) + "\r\n" for i in range(0, len(parts), 2))


# --- the Python API ----------------------------------------------------------------------------------------------
def test_load_tags_raw_text_with_offsets_and_scores(trained, capsys):
    import ner_zoo

    c, ckpt, _ = trained
    text = messy_text(c.datamodule.sentences("test")[:12])
    tagger = ner_zoo.load(ckpt, device="cpu")
    ents = tagger(text)
    assert ents and all(text[e.start:e.end] == e.text for e in ents)
    assert all(0.0 <= e.score <= 1.0 for e in ents) and {e.label for e in ents} <= {"LOC", "MISC", "ORG", "PER"}
    assert [(e.start, -e.end) for e in ents] == sorted((e.start, -e.end) for e in ents)
    assert tagger([text, "", text]) == [ents, [], ents]  # a list in: one list per text
    assert tagger(tokens=[]) == [] and tagger("   \n ") == []
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""  # nothing printed
    with pytest.raises(TypeError):
        tagger([["already", "tokens"]])  # pre-tokenized input goes through tokens=


def test_tagger_equals_trainer_predict_on_tokens(trained):
    """Batching, sorting by length and padding in the API change nothing: the same spans as the Lightning path."""
    from ner_zoo.api import Tagger
    from ner_zoo.data.schema import Sentence
    from ner_zoo.training.inference import predict

    c, _, _ = trained
    sents = [Sentence(list(s.tokens)) for s in c.datamodule.sentences("test")[:40]]
    expected = predict(c.model.eval(), sents, batch_size=8, accelerator="cpu")
    got = Tagger(c.model, batch_size=5)(tokens=[s.tokens for s in sents])
    assert [sorted((e.token_start, e.token_end, e.label) for e in row) for row in got] == \
        [sorted(tuple(sp) for sp in p) for p in expected]
    for s, row in zip(sents, got):
        joined = " ".join(s.tokens)
        assert all(joined[e.start:e.end] == " ".join(s.tokens[e.token_start:e.token_end]) for e in row)


@pytest.mark.parametrize("use_crf", [True, False])
def test_entity_score_is_the_mean_probability_of_its_tags(tmp_path, use_crf):
    """CRF: forward-backward marginals of the decoded tags; softmax: their probabilities; averaged over the span."""
    import torch

    from ner_zoo.data.tagging import tags_to_spans

    c = build({**MODEL, "init_args": {**MODEL["init_args"], "use_crf": use_crf}}, DATA, tmp_path)
    model = c.model.eval()
    torch.manual_seed(0)
    for p in model.projection.parameters():  # sharp random scores: some entities decoded
        p.data.normal_(0, 3)
    sents = list(c.datamodule.sentences("dev"))[:16]
    batch = model.collate(list(enumerate(sents)))
    with torch.no_grad():
        em = model.emissions(batch)
        got = model.from_emissions(em, batch.mask, with_scores=True)
        probs = model.crf.marginals(em, batch.mask) if use_crf else em.softmax(-1)
    assert got == model.decode(batch) and sum(len(g) for g in got) > 0
    itos = model.vocabs.tags.itos
    for b, row in enumerate(got):
        ids = model.ids_from_emissions(em, batch.mask)[b]
        assert row == tags_to_spans([itos[i] for i in ids])
        for sp, score in zip(row, row.scores):
            want = sum(float(probs[b, t, ids[t]]) for t in range(sp.start, sp.end)) / len(sp)
            assert score == pytest.approx(want, abs=1e-5) and 0 <= score <= 1
    if use_crf:
        assert torch.allclose(probs.sum(-1)[batch.mask], torch.ones(()), atol=1e-4)  # float32 forward-backward


def test_span_model_scores_and_nested_entities(tmp_path):
    """Span models: the classifier's probability of each kept span; nested spans both come out, with offsets."""
    import torch

    from ner_zoo.api.tagger import entities
    from ner_zoo.api.text import tokenize
    from ner_zoo.testing.tiny import tiny_model

    model = build(tiny_model("span_classifier", overlap="nested"), DATA, tmp_path).model.eval()
    labels = model.vocabs.labels
    spans = torch.tensor([[[0, 3], [1, 2], [0, 1], [2, 4]]])
    probs = torch.full((1, 4, len(labels) + 1), 0.01)
    probs[0, 0, 1 + labels.index("ORG")] = 0.9  # (0, 3) ORG
    probs[0, 1, 1 + labels.index("LOC")] = 0.7  # (1, 2) LOC inside it
    probs[0, 2, 0] = 0.95  # NONE
    probs[0, 3, 1 + labels.index("PER")] = 0.6  # crosses (0, 3): dropped
    (row,) = model.select_spans(spans, torch.ones(1, 4, dtype=torch.bool), probs)
    assert [tuple(s) for s in row] == [(0, 3, "ORG"), (1, 2, "LOC")] and row.scores == pytest.approx([0.9, 0.7])
    text = "Bank  of Paris said"
    ents = entities(text, tokenize(text), row, row.scores, 0)
    assert [(e.text, e.label, e.start, e.end) for e in ents] == [("Bank  of Paris", "ORG", 0, 14),
                                                                 ("of", "LOC", 6, 8)]


# --- export, model card, hub --------------------------------------------------------------------------------------
@pytest.mark.process
def test_exported_folder_predicts_alone_in_a_fresh_process(trained, exported, tmp_path):
    import ner_zoo

    c, ckpt, _ = trained
    text = messy_text(c.datamodule.sentences("test")[:12])
    want = [e.to_dict() for e in ner_zoo.load(ckpt, device="cpu")(text)]
    assert sorted(p.name for p in exported.iterdir()) == ["README.md", "config.json", "model.safetensors",
                                                          "vocabularies.json"]
    moved = tmp_path / "elsewhere"
    exported.rename(moved)  # nothing refers to where it was written, nor to the run folder or the corpus
    try:
        code = ("import json, sys, ner_zoo; t = ner_zoo.load(sys.argv[1]); "
                "print(json.dumps([e.to_dict() for e in t(sys.stdin.read())]))")
        done = run("-c", code, str(moved), stdin=text, cwd=tmp_path)
        assert json.loads(done.stdout) == want
        (tmp_path / "in.txt").write_text(text)
        cli("predict", "--model", str(moved), "--input", "in.txt", "--output", "out.jsonl", cwd=tmp_path)
        got = [e for line in (tmp_path / "out.jsonl").read_text().splitlines() for e in json.loads(line)["entities"]]
        assert [(e["text"], e["label"], e["score"]) for e in got] == [(e["text"], e["label"], e["score"]) for e in want]
    finally:
        moved.rename(exported)


def test_model_card_from_the_run_record(trained, exported):
    _, ckpt, tmp = trained
    (record,) = tmp.rglob("results.json")
    rec = json.loads(record.read_text())
    card = (exported / "README.md").read_text()
    from huggingface_hub.repocard import metadata_load

    meta = metadata_load(exported / "README.md")  # the Hub's parser (tests/test_card.py: the fields)
    assert meta["library_name"] == "ner-zoo" and meta["pipeline_tag"] == "token-classification"
    assert "# BiLSTMCRF (SampleCorpus)" in card and f"micro F1 **{100 * rec['test']['f1']:.2f}**" in card
    assert f"seed {rec['seed']}" in card and rec["config_hash"] in card and "synthetic" in card
    assert "## Intended use and limits" in card
    config = json.loads((exported / "config.json").read_text())
    assert config["labels"] == ["LOC", "MISC", "ORG", "PER"] and config["tag_scheme"] == "bioes"
    assert "optimizer" not in config["hyper_parameters"] and config["model_class"].endswith("BiLSTMCRF")


def test_export_refuses_a_non_empty_folder_and_cleans_up(trained, tmp_path):
    _, ckpt, _ = trained
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    done = cli("export", str(ckpt), "--output", str(tmp_path / "out"), code=2)
    assert "exists and is not an empty folder" in done.stderr and "Traceback" not in done.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["out"] and (tmp_path / "out" / "keep.txt").read_text() == "mine"


def test_push_to_hub_uploads_the_folder_as_a_model_repo(exported, monkeypatch):
    import huggingface_hub

    from ner_zoo.api.export import push_to_hub

    calls = []

    class FakeApi:
        def __init__(self, token=None):
            calls.append(("init", token))

        def create_repo(self, repo_id, **kw):
            calls.append(("create", repo_id, kw))

        def upload_folder(self, folder_path, repo_id, **kw):
            files = sorted(p.name for p in Path(folder_path).iterdir())
            calls.append(("upload", repo_id, kw["repo_type"], files))
            return type("Info", (), {"commit_url": f"https://huggingface.co/{repo_id}/commit/1"})()

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    url = push_to_hub(exported, "me/tiny-ner", private=True)
    assert url.endswith("me/tiny-ner/commit/1")
    assert calls[1] == ("create", "me/tiny-ner", {"repo_type": "model", "private": True, "exist_ok": True})
    assert calls[2] == ("upload", "me/tiny-ner", "model",
                        ["README.md", "config.json", "model.safetensors", "vocabularies.json"])


# --- predict through pipes ------------------------------------------------------------------------------------------
@pytest.mark.process
def test_predict_streams_stdin_to_stdout_and_reads_its_own_output(trained, tmp_path):
    c, ckpt, _ = trained
    text = messy_text(c.datamodule.sentences("test")[:6]).replace("\r\n\n", "\n")
    done = cli("predict", "--model", str(ckpt), "--input", "-", "--output", "-", stdin=text)
    lines = [json.loads(x) for x in done.stdout.splitlines()]
    assert len(lines) == len([ln for ln in text.split("\n") if ln.strip()]) and "wrote" in done.stderr
    for rec in lines:
        assert rec["text"] in text and len(rec["pred_scores"]) == len(rec["pred_spans"]) == len(rec["entities"])
        assert all(rec["text"][e["start"]:e["end"]] == e["text"] and 0 <= e["score"] <= 1 for e in rec["entities"])
    assert any(rec["entities"] for rec in lines)
    # its own output, and JSON lines with tokens only, are valid input
    again = cli("predict", "--model", str(ckpt), "--input", "-", "--output", "-", stdin=done.stdout)
    tokens_only = "".join(json.dumps({"tokens": r["tokens"]}) + "\n" for r in lines)
    plain = cli("predict", "--model", str(ckpt), "--input", "-", "--output", "-", stdin=tokens_only)
    # a line of raw text may hold several sentences (tagged apart); read back as tokens it is one sentence, so
    # the two token-based runs agree with each other, and each gives one record per line
    got = [[json.loads(x)["pred_spans"] for x in out.stdout.splitlines()] for out in (again, plain)]
    assert got[0] == got[1] and len(got[0]) == len(lines)
    assert [json.loads(x)["gold_spans"] for x in again.stdout.splitlines()] == [[] for _ in lines]


@pytest.mark.process
def test_predict_into_a_closed_pipe_exits_quietly(trained, tmp_path):
    _, ckpt, _ = trained
    (tmp_path / "many.txt").write_text("Anna Berg visited Paris on Monday .\n" * 3000)
    shell = (f"{sys.executable} -m ner_zoo.cli.main predict --model {ckpt} --input many.txt --output - "
             "--batch_size 16 | head -n 2; echo \"status=${PIPESTATUS[0]}\"")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    lines = done.stdout.splitlines()
    assert len(lines) == 3 and json.loads(lines[0])["tokens"][0] == "Anna"
    assert lines[2] == "status=141"  # as a shell reports SIGPIPE; no traceback, only the format it read
    assert done.stderr.splitlines() == ["ner-zoo predict: reading many.txt as raw text (detected; --input_format "
                                        "conll|text|jsonl to choose)"]


@pytest.mark.process
def test_predict_refuses_an_empty_input_and_a_bad_json_line(trained, tmp_path):
    _, ckpt, _ = trained
    done = cli("predict", "--model", str(ckpt), "--input", "-", "--output", "-", stdin="\n \n", code=2)
    assert "no sentences" in done.stderr
    done = cli("predict", "--model", str(ckpt), "--input", "-", "--output", "-", input_format := "--input_format",
               "jsonl", stdin='{"tokens": ["a"]}\n{"tokens": "a b"}\n', code=2)
    assert done.stderr.strip() == "ner-zoo: error: <stdin>:2: 'tokens' must be a list of non-empty strings"
    assert input_format


# --- commands that start without Lightning --------------------------------------------------------------------------
def heavy_imports(*args: str, cwd: Path) -> set[str]:
    """The top-level packages among lightning / torchmetrics that ``ner-zoo ARGS`` imports."""
    done = run("-X", "importtime", "-m", "ner_zoo.cli.main", *args, cwd=cwd)
    mods = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    return {m for m in mods if m.split(".")[0] in ("lightning", "pytorch_lightning", "torchmetrics")}


@pytest.mark.process
def test_predict_and_score_do_not_import_lightning(trained, tmp_path):
    _, ckpt, _ = trained
    (tmp_path / "p.conll").write_text("EU B-ORG B-ORG\nrejects O O\n\nPeter B-PER O\n\n")
    (tmp_path / "in.txt").write_text("Anna Berg visited Paris.\n")
    assert heavy_imports("predict", "--model", str(ckpt), "--input", "in.txt", "--output", "o.jsonl", cwd=tmp_path) \
        == set()
    assert heavy_imports("score", "p.conll", cwd=tmp_path) == set()


@pytest.mark.process
def test_every_command_that_does_not_train_starts_without_lightning(trained, exported, tmp_path):
    _, ckpt, tmp = trained
    (tmp_path / "p.conll").write_text("EU B-ORG B-ORG\nrejects O O\n\nPeter B-PER O\n\n")
    (tmp_path / "in.txt").write_text("Anna Berg visited Paris.\n")
    commands = [["data", "stats", "--files", "train=p.conll"], ["data", "stats", "samplecorpus"], ["compare", str(tmp)],
                ["compare", str(ROOT / "docs" / "runs"), "--only-runs"],  # older records: corpus defaults read
                ["predict", "--model", str(exported), "--input", "in.txt", "--output", "o2.jsonl"],
                ["--help"], ["predict", "--help"], ["export", "--help"], ["data", "stats", "--help"]]
    for args in commands:
        assert heavy_imports(*args, cwd=tmp_path) == set(), args
    assert heavy_imports("fit", "--help", cwd=tmp_path)  # training does (the check can fail)


@pytest.mark.process
def test_import_ner_zoo_is_light():
    done = run("-c", "import sys, ner_zoo; print(sorted(m for m in ('torch', 'lightning', 'transformers') "
                     "if m in sys.modules)); print(callable(ner_zoo.load))")
    assert done.stdout.split("\n")[:2] == ["[]", "True"]


def test_inference_predict_takes_no_sentences_and_names_the_api_for_strings(trained):
    from ner_zoo.training.inference import predict

    c, _, _ = trained
    assert predict(c.model, []) == []
    with pytest.raises(TypeError, match=r"ner_zoo.load\(checkpoint\)\(text\)"):
        predict(c.model, ["Anna Berg visited Paris ."])


@pytest.mark.process
def test_load_and_tag_without_lightning_then_train_with_it(trained, tmp_path):
    """``ner_zoo.load`` builds the network alone: tagging leaves Lightning unimported, and a later ``import
    lightning`` in the same process (training) gets the real package."""
    _, ckpt, _ = trained
    code = ("import sys, ner_zoo; t = ner_zoo.load(sys.argv[1], device='cpu'); a = t('Anna Berg visited Paris.'); "
            "b = t(tokens=['Peter', 'Blackburn']); "
            "print(sorted(m for m in ('lightning', 'pytorch_lightning', 'torchmetrics') if m in sys.modules)); "
            "import lightning.pytorch as pl; from ner_zoo.models import BiLSTMCRF; "
            "print(issubclass(BiLSTMCRF, pl.LightningModule), t('Anna Berg visited Paris.') == a)")
    out = run("-c", code, str(ckpt), cwd=tmp_path).stdout.splitlines()
    assert out == ["[]", "True True"]


# --- exported folders as guarded as checkpoints (issue 43 item 4) -------------------------------------------------
def _config(d: Path) -> dict:
    return json.loads((d / "config.json").read_text())


def _set_config(d: Path, **changes) -> None:
    cfg = _config(d)
    for k, v in changes.items():
        if v is None:
            cfg.pop(k, None)
        else:
            cfg[k] = v
    (d / "config.json").write_text(json.dumps(cfg))


def _flip(p: Path, n: int = 1000) -> None:
    b = bytearray(p.read_bytes())
    for i in range(len(b) - n, len(b)):
        b[i] ^= 0xFF
    p.write_bytes(bytes(b))


def _truncate(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2])


def _hp(d: Path, **hp) -> None:
    cfg = _config(d)
    cfg["hyper_parameters"].update(hp)
    (d / "config.json").write_text(json.dumps(cfg))


#: damage -> the file the one line must name (probes M-*, L-* of robustness_4)
DAMAGE = {
    "flipped weights": (lambda d: _flip(d / "model.safetensors"), "model.safetensors: corrupted"),
    "truncated weights": (lambda d: _truncate(d / "model.safetensors"), "model.safetensors: corrupted"),
    "a Hugging Face folder": (lambda d: (d / "config.json").write_text('{"architectures": ["BertModel"]}'),
                              "config.json: not a ner-zoo export"),
    "config.json not JSON": (lambda d: (d / "config.json").write_text("{oops"), "config.json: not a JSON"),
    "config.json a list": (lambda d: (d / "config.json").write_text("[1]"), "config.json: not a ner-zoo export"),
    "format a string": (lambda d: _set_config(d, ner_zoo_format="1"), "config.json: 'ner_zoo_format' is '1'"),
    "vocabularies missing": (lambda d: (d / "vocabularies.json").unlink(), "vocabularies.json: missing"),
    "vocabularies edited": (lambda d: (d / "vocabularies.json").write_text('{"words": 5}'),
                            "vocabularies.json: corrupted"),
    "digests not a mapping": (lambda d: _set_config(d, sha256=[1]), "config.json: 'sha256' is not a mapping"),
    "digest names ..": (lambda d: _set_config(d, sha256={"../x": "0"}), "outside the folder"),
    # without digests (an older export) the files' own checks still name them
    "old: size changed": (lambda d: (_set_config(d, sha256=None), _hp(d, lstm_hidden=7)),
                          "model.safetensors: the weights do not fit the model config.json describes"),
    "old: truncated weights": (lambda d: (_set_config(d, sha256=None), _truncate(d / "model.safetensors")),
                               "model.safetensors: not a readable safetensors file"),
    "old: vocabularies edited": (lambda d: (_set_config(d, sha256=None),
                                            (d / "vocabularies.json").write_text('{"words": 5}')),
                                 "vocabularies.json: not ner-zoo vocabularies"),
    "old: vocabularies not JSON": (lambda d: (_set_config(d, sha256=None),
                                              (d / "vocabularies.json").write_bytes(b"\xff")),
                                   "vocabularies.json: not a JSON"),
    "old: hyper-parameters wrong": (lambda d: (_set_config(d, sha256=None), _hp(d, lstm_hidden="many")),
                                    "config.json: its hyper-parameters do not build"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damaged_exported_folder_is_one_error_naming_the_file(exported, tmp_path, damage):
    import shutil
    import warnings

    import ner_zoo
    from ner_zoo.errors import CheckpointError

    folder = tmp_path / "m"
    shutil.copytree(exported, folder)
    harm, expected = DAMAGE[damage]
    harm(folder)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an export without digests warns
        with pytest.raises(CheckpointError) as e:
            ner_zoo.load(folder, device="cpu")
    line = str(e.value)
    assert "\n" not in line and str(folder) in line and expected in line, line


def test_export_records_digests_and_an_old_export_warns(exported, tmp_path):
    import shutil

    import ner_zoo

    digests = _config(exported)["sha256"]
    assert sorted(digests) == ["model.safetensors", "vocabularies.json"]
    folder = tmp_path / "old"
    shutil.copytree(exported, folder)
    _set_config(folder, sha256=None)
    with pytest.warns(UserWarning, match="exported without file digests"):
        ner_zoo.load(folder, device="cpu")


def test_damaged_folder_under_predict_is_one_line(exported, tmp_path, capsys):
    import shutil

    from cli_cases import ner_zoo, one_error_line

    folder = tmp_path / "m"
    shutil.copytree(exported, folder)
    _flip(folder / "model.safetensors")
    (tmp_path / "in.txt").write_text("Anna Berg visited Paris.\n")
    rc, _, err = ner_zoo(capsys, "predict", "--model", folder, "--input", tmp_path / "in.txt", "--output", "-")
    assert rc == 2 and f"{folder / 'model.safetensors'}: corrupted" in one_error_line(err)


# --- a typed Python API (issue 43 item 5; probe A1 of robustness_4) --------------------------------------------------
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

_WORD = st.text(st.characters(categories=("L", "N", "P")), min_size=1, max_size=6)
_ANY_SCALAR = st.one_of(st.none(), st.integers(), st.floats(allow_nan=False), st.booleans(), st.binary(max_size=4),
                        _WORD)


def _wrong():
    """Values of every type but the documented ones, nested a little."""
    return st.recursive(_ANY_SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                            st.tuples(inner, inner),
                                                            st.dictionaries(_WORD, inner, max_size=2)), max_leaves=6)


def _documented_text(x) -> bool:
    return isinstance(x, str) or isinstance(x, list) and all(isinstance(t, str) for t in x)


def _documented_tokens(x) -> bool:
    if not isinstance(x, list):
        return False
    if not x or isinstance(x[0], str):
        return all(isinstance(t, str) for t in x)
    return all(isinstance(r, list) and all(isinstance(t, str) for t in r) for r in x)


@pytest.fixture(scope="module")
def use_tagger(trained):
    import ner_zoo

    return ner_zoo.load(trained[1], device="cpu")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.one_of(st.none(), _WORD, st.lists(_WORD, max_size=3), _wrong()),
       tokens=st.one_of(st.none(), st.lists(_WORD, max_size=4), st.lists(st.lists(_WORD, max_size=3), max_size=3),
                        _wrong()))
def test_tagger_accepts_exactly_the_documented_inputs(use_tagger, text, tokens):
    """docs/api.md: ``text`` a string or a list of strings, or ``tokens=`` a list of strings or a list of such
    lists. Those are tagged (one list per input); anything else is a TypeError saying what it got, never tagged
    as characters (old code: ``tokens="Paris"`` tagged P a r i s, A1)."""
    ok_text, ok_tokens = text is not None and _documented_text(text), tokens is not None and _documented_tokens(tokens)
    if (text is None) == (tokens is None) or not (ok_text or ok_tokens):
        with pytest.raises(TypeError) as e:
            use_tagger(text=text, tokens=tokens)
        assert "got" in str(e.value) or "one of them" in str(e.value)
        return
    if ok_tokens and any(not t or any(c.isspace() for c in t)
                         for r in (tokens if tokens and isinstance(tokens[0], list) else [tokens]) for t in r):
        with pytest.raises(ValueError, match="non-empty strings without whitespace"):
            use_tagger(tokens=tokens)
        return
    got = use_tagger(text=text) if ok_text else use_tagger(tokens=tokens)
    many = (isinstance(text, list)) if ok_text else bool(tokens) and isinstance(tokens[0], list)
    assert isinstance(got, list)
    if many:
        assert len(got) == len(text if ok_text else tokens) and all(isinstance(r, list) for r in got)
    else:
        assert all(isinstance(e, ner_zoo_entity()) for e in got)


def ner_zoo_entity():
    from ner_zoo.api import Entity

    return Entity


@pytest.mark.parametrize("call, message", [
    (dict(tokens="Paris"), "tokens must be a list of strings or a list of lists of strings; got str 'Paris' (raw "
                           "text: pass it as text)"),
    (dict(text={"text": "x"}), "text must be a string or a list of strings; got dict {'text': 'x'}"),
    (dict(text=("a", "b")), "text must be a string or a list of strings; got tuple ('a', 'b') (pre-tokenized"),
    (dict(text=["a", ["b"]]), "got a list whose item 1 is list ['b']"),
    (dict(text=b"Paris"), "got bytes b'Paris'"),
    (dict(tokens=["a", 5]), "got a list whose item 1 is int 5"),
    (dict(tokens=[["a"], "b"]), "got a list whose item 1 is str 'b'"),
    (dict(tokens=(t for t in ["a"])), "got generator"),
    (dict(text="a", tokens=["a"]), "one of them; got both"),
    (dict(), "one of them"),
])
def test_tagger_type_errors_say_what_they_got(use_tagger, call, message):
    with pytest.raises(TypeError) as e:
        use_tagger(**call)
    assert message in str(e.value)
