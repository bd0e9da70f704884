"""ONNX export of the taggers (issue 28): ``ner-zoo export --format onnx`` traces the scoring network with dynamic
batch, sentence-length and word-length axes; onnxruntime's emissions equal PyTorch's on batches of other shapes than
the traced one, and the numpy decoders give the same spans and scores as the PyTorch model; loading the folder and
tagging imports neither torch nor Lightning."""

from __future__ import annotations

import json
import warnings

import pytest

ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from test_model_use import cli, messy_text, run  # noqa: E402
from tiny_bert import tiny_bert_dir  # noqa: E402,F401  (session fixture)

SHAPES = [  # batch x sentence length x word length, none of them the traced one
    [["Yes"]],
    [["Only", "France", "and", "Britain", "backed", "Fischler", "'s", "proposal", "."], ["Yes"],
     ["Brussels", "1996-08-22", "Antidisestablishmentarianism"]],
    [["EU"] * 40, ["a", "b"], ["Peter", "Blackburn"], ["x"], ["BRUSSELS"] * 3],
]


def _trace_and_compare(module: torch.nn.Module, make, tmp_path) -> float:
    """Export ``module`` traced on ``make(0)``; the largest difference to PyTorch on ``make(1..3)``."""
    path = tmp_path / "m.onnx"
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(module.eval(), (make(0),), str(path), dynamo=False, input_names=["chars"],
                          dynamic_axes={"chars": {0: "b", 1: "l", 2: "c"}}, opset_version=17)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    worst = 0.0
    for k in (1, 2, 3):
        chars = make(k)
        with torch.no_grad():
            want = module(chars).numpy()
        got = session.run(None, {"chars": chars.numpy()})[0]
        assert got.shape == want.shape
        worst = max(worst, float(np.abs(got - want).max()))
    return worst


@pytest.mark.parametrize("encoder", ["CharBiLSTM", "CharCNN", "IntNet"])
def test_char_encoders_trace_shape_generic(encoder, tmp_path):
    """Word count and word length are data-dependent in the char encoders; traced, they must stay symbolic."""
    from ner_zoo.modules import CharBiLSTM, CharCNN
    from ner_zoo.modules.intnet import IntNet

    torch.manual_seed(0)
    module = {"CharBiLSTM": lambda: CharBiLSTM(30, 6, 5), "CharCNN": lambda: CharCNN(30, 6, 5),
              "IntNet": lambda: IntNet(30, 6, 4, 3, layers=3)}[encoder]()

    def make(k: int) -> torch.Tensor:  # [B, L, C] char ids, left-aligned words, padding words all zero
        g = torch.Generator().manual_seed(k)
        b, l, c = [(2, 4, 5), (1, 1, 1), (3, 7, 12), (4, 2, 3)][k]
        lengths = torch.randint(1, c + 1, (b, l), generator=g)
        lengths[0, -1] = 0 if l > 1 else lengths[0, -1]  # a padding word
        ids = torch.randint(1, 30, (b, l, c), generator=g)
        return ids * (torch.arange(c) < lengths.unsqueeze(-1))

    assert _trace_and_compare(module, make, tmp_path) < 1e-5


def test_numpy_decoders_equal_the_crf():
    from ner_zoo.api.onnx import marginals, viterbi
    from ner_zoo.data.tagging import allowed_transitions, tag_names
    from ner_zoo.modules.crf import NEG, LinearChainCRF

    tags = tag_names(["PER", "LOC"], "bioes")
    crf = LinearChainCRF(len(tags), constraints=allowed_transitions(tags, "bioes"))
    torch.manual_seed(1)
    em = torch.randn(3, 6, len(tags)) * 3
    mask = torch.arange(6) < torch.tensor([6, 1, 4]).unsqueeze(1)
    start = crf.start_transitions.detach().masked_fill(~crf.allowed_start, NEG).double().numpy()
    trans = crf.transitions.detach().masked_fill(~crf.allowed_transitions, NEG).double().numpy()
    end = crf.end_transitions.detach().masked_fill(~crf.allowed_end, NEG).double().numpy()
    want_paths, want_probs = crf.decode(em, mask), crf.marginals(em, mask)
    for b, n in enumerate(mask.sum(1).tolist()):
        e = em[b, :n].double().numpy()
        assert viterbi(e, start, trans, end) == want_paths[b, :n].tolist()
        np.testing.assert_allclose(marginals(e, start, trans, end), want_probs[b, :n].numpy(), atol=1e-5)


@pytest.mark.parametrize("lengths", [[6, 1, 4], [1], [1, 1, 1], [9, 3, 9, 1, 2, 7, 5, 1]])
def test_batched_decoders_equal_the_per_sentence_ones_and_the_crf(lengths):
    """Viterbi and forward-backward over a whole padded batch (ragged lengths, length-1 sentences, padding scores
    that are not zero): row by row the per-sentence numpy decoders' results and the PyTorch CRF's."""
    from ner_zoo.api.onnx import marginals, marginals_batch, viterbi, viterbi_batch
    from ner_zoo.data.tagging import allowed_transitions, tag_names
    from ner_zoo.modules.crf import NEG, LinearChainCRF

    tags = tag_names(["PER", "LOC", "ORG"], "bioes")
    crf = LinearChainCRF(len(tags), constraints=allowed_transitions(tags, "bioes"))
    torch.manual_seed(len(lengths))
    with torch.no_grad():
        for p in (crf.start_transitions, crf.transitions, crf.end_transitions):
            p.normal_()
    em = torch.randn(len(lengths), max(lengths), len(tags)) * 3  # padding positions hold scores too
    mask = torch.arange(max(lengths)) < torch.tensor(lengths).unsqueeze(1)
    start = crf.start_transitions.detach().masked_fill(~crf.allowed_start, NEG).double().numpy()
    trans = crf.transitions.detach().masked_fill(~crf.allowed_transitions, NEG).double().numpy()
    end = crf.end_transitions.detach().masked_fill(~crf.allowed_end, NEG).double().numpy()
    e, n = em.double().numpy(), np.array(lengths)
    paths, probs = viterbi_batch(e, n, start, trans, end), marginals_batch(e, n, start, trans, end)
    assert paths.shape == mask.shape and probs.shape == e.shape
    want_paths, want_probs = crf.decode(em, mask), crf.marginals(em, mask)
    for b, k in enumerate(lengths):
        assert paths[b, :k].tolist() == viterbi(e[b, :k], start, trans, end) == want_paths[b, :k].tolist()
        np.testing.assert_allclose(probs[b, :k], marginals(e[b, :k], start, trans, end), rtol=0, atol=1e-12)
        np.testing.assert_allclose(probs[b, :k], want_probs[b, :k].numpy(), atol=1e-5)
        assert not paths[b, k:].any() and not probs[b, k:].any()
    np.testing.assert_allclose(probs.sum(-1), mask.double().numpy(), atol=1e-9)


def test_batched_marginals_fall_back_to_log_space_where_probabilities_underflow(monkeypatch):
    """Emissions thousands apart under the BIOES constraints: the rescaled forward pass underflows to zero; those
    rows are decoded again in log space and still equal the per-sentence log-space decoder."""
    import ner_zoo.api.onnx as onnx
    from ner_zoo.data.tagging import allowed_transitions, tag_names
    from ner_zoo.modules.crf import NEG

    tags = tag_names(["PER", "LOC"], "bioes")
    first, moves, last = (np.asarray(x) for x in allowed_transitions(tags, "bioes"))
    n = len(tags)
    start, trans, end = np.where(first, 0.0, NEG), np.where(moves, 0.0, NEG), np.where(last, 0.0, NEG)
    rng = np.random.default_rng(0)
    em = rng.normal(size=(4, 7, n)) * 2000
    lengths = np.array([7, 1, 5, 3])
    calls = []
    real = onnx.marginals_log_batch
    monkeypatch.setattr(onnx, "marginals_log_batch", lambda *a: calls.append(len(a[1])) or real(*a))
    probs = onnx.marginals_batch(em, lengths, start, trans, end)
    assert calls, "these emissions underflow in probability space"
    for b, k in enumerate(lengths):
        np.testing.assert_allclose(probs[b, :k], onnx.marginals(em[b, :k], start, trans, end), rtol=0, atol=1e-12)
        assert not probs[b, k:].any()


def test_onnx_decode_is_the_per_sentence_decode(onnx_folder):
    """``OnnxModel.decode`` (batched decoders) against the per-sentence decoders on the same emissions."""
    from ner_zoo.api.onnx import OnnxModel, marginals, viterbi
    from ner_zoo.data.tagging import tags_to_spans

    model = OnnxModel(onnx_folder)
    rows = [r for shape in SHAPES for r in shape]
    got = model.decode(rows)
    for row, em, (spans, scores) in zip(rows, model.emissions(rows), got):
        em = em[: len(row)].astype(np.float64)
        ids = viterbi(em, *model.crf)
        picked = marginals(em, *model.crf)[np.arange(len(ids)), ids]
        want = tags_to_spans([model.vocabs.tags[i] for i in ids])
        assert spans == want
        assert scores == pytest.approx([float(picked[s.start:s.end].mean()) for s in want], abs=1e-12)


@pytest.fixture(scope="module")
def onnx_folder(trained, tmp_path_factory):
    from ner_zoo.api.export import export

    return export(trained[1], tmp_path_factory.mktemp("onnx") / "model", format="onnx")


def test_onnx_emissions_spans_and_scores_equal_pytorch(trained, onnx_folder):
    import ner_zoo
    from ner_zoo.api.onnx import OnnxModel

    c, ckpt, _ = trained
    assert sorted(p.name for p in onnx_folder.iterdir()) == ["README.md", "config.json", "crf.json", "model.onnx",
                                                             "vocabularies.json"]
    assert json.loads((onnx_folder / "config.json").read_text())["runtime"] == "onnx"
    torch_tagger, onnx_tagger = ner_zoo.load(ckpt, device="cpu"), ner_zoo.load(onnx_folder)
    assert type(onnx_tagger).__name__ == "OnnxTagger"
    model, onnx_model = torch_tagger.model, OnnxModel(onnx_folder)
    _assert_same_emissions(model, onnx_model, SHAPES)
    text = messy_text(c.datamodule.sentences("test")[:24])
    want_ents, got_ents = torch_tagger(text), onnx_tagger(text)
    assert want_ents, "the tiny model finds entities in its own test split"
    assert [(e.text, e.label, e.start, e.end) for e in got_ents] == [(e.text, e.label, e.start, e.end) for e in want_ents]
    assert [e.score for e in got_ents] == pytest.approx([e.score for e in want_ents], abs=1e-4)
    rows = [s.tokens for s in c.datamodule.sentences("test")[:7]]
    assert [[(e.start, e.end, e.label) for e in r] for r in onnx_tagger(tokens=rows)] == \
        [[(e.start, e.end, e.label) for e in r] for r in torch_tagger(tokens=rows)]


@pytest.mark.process
def test_onnx_folder_predicts_in_a_fresh_process_without_torch(trained, onnx_folder, tmp_path):
    import ner_zoo

    c, ckpt, _ = trained
    text = messy_text(c.datamodule.sentences("test")[:12])
    want = [(e.text, e.label, e.start, e.end) for e in ner_zoo.load(ckpt, device="cpu")(text)]
    code = ("import json, sys, ner_zoo; t = ner_zoo.load(sys.argv[1]); ents = t(sys.stdin.read()); "
            "print(json.dumps([[e.text, e.label, e.start, e.end] for e in ents])); "
            "print(sorted(m for m in ('torch', 'lightning', 'pytorch_lightning') if m in sys.modules))")
    out = run("-c", code, str(onnx_folder), stdin=text, cwd=tmp_path).stdout.splitlines()
    assert [tuple(e) for e in json.loads(out[0])] == want
    assert out[1] == "[]"
    (tmp_path / "in.txt").write_text(text)
    cli("predict", "--model", str(onnx_folder), "--input", "in.txt", "--output", "out.jsonl", cwd=tmp_path)
    got = [e for line in (tmp_path / "out.jsonl").read_text().splitlines() for e in json.loads(line)["entities"]]
    assert [(e["text"], e["label"]) for e in got] == [w[:2] for w in want]  # offsets: into each input line


@pytest.mark.process
def test_onnx_export_cli_and_what_it_refuses(trained, onnx_folder, tmp_path):
    _, ckpt, _ = trained
    cli("export", str(ckpt), "--output", "m", "--format", "onnx", cwd=tmp_path)
    assert (tmp_path / "m" / "model.onnx").is_file() and (tmp_path / "m" / "crf.json").is_file()
    from ner_zoo.api.export import load_folder
    from ner_zoo.errors import CheckpointError

    with pytest.raises(CheckpointError, match="ONNX model"):
        load_folder(onnx_folder)


@pytest.mark.slow
def test_every_tiny_tagger_exports_to_onnx(tiny_bert_dir, tmp_path):
    """BiLSTM-CRF (char BiLSTM), PSA, HCR (IntNet, memory), MIN, a softmax tagger, the transformer tagger: onnxruntime
    equals PyTorch on sentences of other shapes; a span model is refused with a reason."""
    import ner_zoo
    from battery import build
    from ner_zoo.api.export import export
    from ner_zoo.errors import CheckpointError
    from ner_zoo.testing.tiny import TINY, tiny_model

    data = {"class_path": "ner_zoo.data.SampleCorpus", "init_args": {"batch_size": 8, "max_sentences": 48}}
    text = ["Anna Berg visited Paris on Monday.  Shares of Globex rose in Florence!", "Yes",
            "The Bank of Georgia said John Smith, of the U.S. Treasury, met officials in Rome."]
    cases = {name: tiny_model(name, tiny_bert_dir) for name in ("bilstm_crf", "psa", "hcr", "min",
                                                                "transformer_tagger", "span_classifier")}
    cases["softmax"] = tiny_model("bilstm_crf", use_crf=False)
    assert {"bilstm_crf", "psa", "hcr", "min", "transformer_tagger"} <= set(TINY)
    for name, config in cases.items():
        folder = tmp_path / name
        build(config, data, folder, trainer={"max_steps": 3, "max_epochs": 1}, subcommand="fit")
        ckpt = sorted((folder / "ckpt").glob("*.ckpt"))[0]
        if name == "span_classifier":
            with pytest.raises(CheckpointError, match="not a token tagger"):
                export(ckpt, folder / "onnx", format="onnx")
            assert not (folder / "onnx").exists()
            continue
        out = export(ckpt, folder / "onnx", format="onnx")  # checks the emissions on other shapes itself
        want, got = ner_zoo.load(ckpt, device="cpu")(text), ner_zoo.load(out)(text)
        assert [[(e.text, e.label) for e in r] for r in got] == [[(e.text, e.label) for e in r] for r in want], name
        assert [e.score for r in got for e in r] == pytest.approx([e.score for r in want for e in r], abs=1e-4)


# --- transformer taggers: sub-word inputs made outside the graph (tokenizer.json + ner_zoo.modules.subwords) ----------
TEXT = ('Lucia Ortega flew to Osaka to watch the Davis Cup, sources said.  "Mei Varga met Chloe Osei in Havana," '
        'officials added.\nMateo met Arjun Varga in Abu Dhabi. Late on Tuesday, Ortega-Varga left Zürich.')
LONG = [f"w{k % 7}{'x' * (k % 3)}" if k % 5 else "Paris" for k in range(80)]  # > the tiny BERT's 62 sub-words
BERT_CASES = {  # the tiny BERT: 64 positions, so LONG is read in overlapping windows
    "crf": ("transformer_tagger", {}, {"context": 1}),  # first sub-word, casing embedding, document context
    "softmax": ("transformer_tagger", {"use_crf": False}, {"pooling": "mean", "layers": "scalar_mix"}),
    "min_bert": ("min", {}, {"pooling": "max", "max_subwords_per_word": 2}),  # a word model "+BERT"
}


@pytest.fixture(scope="module")
def bert_tagger(tiny_bert_dir, tmp_path_factory):  # noqa: F811
    """``case -> (checkpoint, folder)``: a tiny tagger of ``BERT_CASES`` fitted for a few steps, once per module."""
    from battery import build
    from ner_zoo.testing.tiny import tiny_model

    made = {}

    def get(case: str):
        if case not in made:
            name, extra, encoder = BERT_CASES[case]
            encoder = {**encoder, "model": str(tiny_bert_dir)}
            if name == "min":
                extra = {**extra, "encoder": {"class_path": "ner_zoo.modules.transformer.TransformerEncoder",
                                              "init_args": encoder}}
                config = tiny_model(name, **extra)
            else:
                config = tiny_model(name, tiny_bert_dir, encoder=encoder, **extra)
            data = {"class_path": "ner_zoo.data.SampleCorpus", "init_args": {"batch_size": 8, "max_sentences": 48}}
            folder = tmp_path_factory.mktemp(case)
            steps = 6 if name == "min" else 24  # enough for the transformer taggers to find entities in TEXT
            build(config, data, folder, trainer={"max_steps": steps, "max_epochs": 4}, subcommand="fit")
            made[case] = (sorted((folder / "ckpt").glob("*.ckpt"))[0], folder)
        return made[case]

    return get


def _assert_same_emissions(model, onnx_model, batches) -> None:
    """onnxruntime's emissions equal the PyTorch model's on every batch of word lists."""
    from ner_zoo.data.schema import Sentence

    for rows in batches:
        batch = model.collate([(i, Sentence(r)) for i, r in enumerate(rows)])
        with torch.no_grad():
            want = model.emissions(batch).numpy()
        got = onnx_model.emissions(rows)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-4)


def _entities(result):
    return [[(e.text, e.label, e.start, e.end) for e in r] for r in result]


@pytest.mark.parametrize("case", list(BERT_CASES))
def test_transformer_onnx_emissions_spans_and_scores_equal_pytorch(bert_tagger, case):
    """The graph takes sub-word rows; windows over a long sentence, pooling, casing and document context match."""
    import ner_zoo
    from ner_zoo.api.export import export
    from ner_zoo.api.onnx import OnnxModel
    ckpt, folder = bert_tagger(case)
    out = export(ckpt, folder / "onnx", format="onnx")
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["README.md", "config.json", "model.onnx", "tokenizer.json", "vocabularies.json"]
        + (["crf.json"] if case != "softmax" else []))  # no encoder-0/: the weights are in the graph
    torch_tagger = ner_zoo.load(ckpt, device="cpu", precision="32")  # fp32, as the graph (auto is bf16 on a bf16 host)
    onnx_tagger = ner_zoo.load(out)
    model, onnx_model = torch_tagger.model, OnnxModel(out)
    _assert_same_emissions(model, onnx_model, SHAPES + [[LONG, ["Yes"], LONG[:30]]])
    texts = [TEXT, " ".join(LONG) + " in Rome.\n\nYes. " + TEXT[::-1]]
    for text in texts + texts[:1]:  # a second call: context from its own text only, in both runtimes
        want_ents, got_ents = torch_tagger(text), onnx_tagger(text)
        assert _entities([got_ents]) == _entities([want_ents])
        assert [e.score for e in got_ents] == pytest.approx([e.score for e in want_ents], abs=1e-4)
    if case != "min_bert":
        assert torch_tagger(texts[0]), "the tiny model finds entities"
    rows = [LONG, ["Anna", "Berg", "visited", "Paris"], LONG[5:]]
    want, got = torch_tagger(tokens=rows), onnx_tagger(tokens=rows)
    assert _entities(got) == _entities(want)
    assert [e.score for r in got for e in r] == pytest.approx([e.score for r in want for e in r], abs=1e-4)


@pytest.mark.process
def test_transformer_onnx_through_the_cli_in_processes_without_torch(bert_tagger, tmp_path):
    """``ner-zoo export --format onnx`` then ``ner-zoo predict --model DIR`` writes what predict on the checkpoint
    writes (made here, in process); ``ner_zoo.load(DIR)`` tags without importing torch, Lightning or transformers."""
    ckpt, _ = bert_tagger("crf")
    cli("export", str(ckpt), "--output", "m", "--format", "onnx", cwd=tmp_path)
    text = TEXT + "\n" + " ".join(LONG) + " in Rome.\nYes.\n"
    (tmp_path / "in.txt").write_text(text)
    cli("predict", "--model", "m", "--input", "in.txt", "--output", "got.jsonl", cwd=tmp_path)
    got = [json.loads(line) for line in (tmp_path / "got.jsonl").read_text().splitlines()]
    import ner_zoo
    from ner_zoo.cli.predict import jsonl_line, text_record

    torch_tagger, want = ner_zoo.load(ckpt, device="cpu", precision="32"), []  # predict --model CKPT --precision 32
    for line in text.splitlines():
        rec = text_record(line, "in.txt")
        preds = torch_tagger.predict_sentences(rec.sentences)
        want.append(json.loads(jsonl_line(rec, [p[0] for p in preds], [p[1] for p in preds])))
    assert [r["pred_spans"] for r in got] == [r["pred_spans"] for r in want]
    assert [[(e["text"], e["label"], e["start"]) for e in r["entities"]] for r in got] == \
        [[(e["text"], e["label"], e["start"]) for e in r["entities"]] for r in want]
    assert [x for r in got for x in r["pred_scores"]] == \
        pytest.approx([x for r in want for x in r["pred_scores"]], abs=1e-4)
    assert any(r["entities"] for r in want)
    code = ("import json, sys, ner_zoo; t = ner_zoo.load(sys.argv[1]); ents = t(sys.stdin.read()); "
            "print(json.dumps([[e.text, e.label, e.start, e.end, e.score] for e in ents])); "
            "print(sorted(m for m in ('torch', 'lightning', 'pytorch_lightning', 'transformers') if m in sys.modules))")
    out = run("-c", code, "m", stdin=TEXT, cwd=tmp_path).stdout.splitlines()
    want = torch_tagger(TEXT)
    assert [tuple(e[:4]) for e in json.loads(out[0])] == [(e.text, e.label, e.start, e.end) for e in want]
    assert [e[4] for e in json.loads(out[0])] == pytest.approx([e.score for e in want], abs=1e-4)
    assert out[1] == "[]"


def test_document_context_is_the_text_of_the_call_only(bert_tagger):
    """A tagger whose encoder reads neighbouring sentences takes them from the text of the same call: a short
    text tagged after a long one scores as on a fresh tagger, in PyTorch and in onnxruntime."""
    import ner_zoo
    from ner_zoo.api.export import export
    from ner_zoo.data.schema import Sentence

    ckpt, folder = bert_tagger("crf")  # context 1
    out = folder / "onnx-context"
    if not out.exists():
        export(ckpt, out, format="onnx")
    short = "Mateo met Arjun Varga in Abu Dhabi."
    for load in (lambda: ner_zoo.load(ckpt, device="cpu"), lambda: ner_zoo.load(out)):
        used = load()
        used(TEXT)  # four sentences of one document, indexed as context of that call
        got, want = used(short), load()(short)
        assert [(e.text, e.label) for e in got] == [(e.text, e.label) for e in want]
        assert [e.score for e in got] == pytest.approx([e.score for e in want], abs=1e-7)
        sentence = Sentence(short.split(), doc_id="text0", index=0)  # the id the first sentence of TEXT had
        assert used.predict_sentences([sentence]) == load().predict_sentences([sentence])
        used(TEXT)
        kept = used.predict_sentences([sentence], keep_context=True)  # ner-zoo predict: a file, group by group
        assert kept != load().predict_sentences([sentence])


def test_a_file_is_tagged_as_in_one_call_whatever_its_groups(bert_tagger, tmp_path, monkeypatch):
    """``ner-zoo predict`` tags a file group by group; a sentence at the end of a group still reads the next
    sentences of its document as context (they are in the next group), in PyTorch and in onnxruntime."""
    import io

    import ner_zoo
    from ner_zoo.api.export import export
    from ner_zoo.cli import predict as predict_cli

    ckpt, folder = bert_tagger("crf")  # context 1
    out = folder / "onnx-context"
    if not out.exists():
        export(ckpt, out, format="onnx")
    doc = [s.split() for s in ("Mateo met Arjun Varga in Abu Dhabi .", "Lucia Ortega flew to Osaka .",
                               "Chloe Osei left Havana on Tuesday .", "Ortega-Varga met Mei in Zürich .")]
    path = tmp_path / "in.conll"
    path.write_text("".join("-DOCSTART- O\n\n" + "".join("\n".join(f"{w} O" for w in s) + "\n\n" for s in doc[k:])
                            for k in (0, 1)), encoding="utf-8")

    def tagged(tagger, group_batches: int) -> list[dict]:
        monkeypatch.setattr(predict_cli, "GROUP_BATCHES", group_batches)
        recs, _, labelled = predict_cli.records(path, "conll", split=False)
        f = io.StringIO()
        assert predict_cli.write_predictions(f, recs, tagger, "jsonl", labelled, None, batch_size=1) == 7
        return [json.loads(line) for line in f.getvalue().splitlines()]

    def same(got: list[dict], want: list[dict]) -> None:
        assert [g["pred_spans"] for g in got] == [w["pred_spans"] for w in want]
        for g, w in zip(got, want):  # the same inputs; the kernels may round differently by memory alignment
            assert g["pred_scores"] == pytest.approx(w["pred_scores"], abs=2e-6)

    for load in (lambda: ner_zoo.load(ckpt, device="cpu"), lambda: ner_zoo.load(out)):
        assert load().context_sentences == 1
        whole = tagged(load(), 100)
        same(tagged(load(), 1), whole)  # one sentence per group
        same(tagged(load(), 2), whole)


#: damage of an ONNX folder -> what the one line names (probes M-*, L-onnx of robustness_4; issue 43 item 4)
def _onnx_damage():
    import json

    def nodigest(d):
        cfg = json.loads((d / "config.json").read_text())
        cfg.pop("sha256")
        (d / "config.json").write_text(json.dumps(cfg))

    def trunc(p):
        p.write_bytes(p.read_bytes()[:500])

    return {
        "crf.json missing": (lambda d: (d / "crf.json").unlink(), "crf.json: missing"),
        "model.onnx truncated": (lambda d: trunc(d / "model.onnx"), "model.onnx: corrupted"),
        "crf.json edited": (lambda d: (d / "crf.json").write_text("{}"), "crf.json: corrupted"),
        "old: crf.json missing": (lambda d: (nodigest(d), (d / "crf.json").unlink()), "crf.json: missing"),
        "old: model.onnx truncated": (lambda d: (nodigest(d), trunc(d / "model.onnx")),
                                      "model.onnx: not a loadable ONNX model"),
        "old: crf.json wrong": (lambda d: (nodigest(d), (d / "crf.json").write_text('{"start": [1]}')),
                                "crf.json: not the CRF scores"),
        "old: model.onnx missing": (lambda d: (nodigest(d), (d / "model.onnx").unlink()), "model.onnx: missing"),
        "config.json foreign": (lambda d: (d / "config.json").write_text('{"model_type": "bert"}'),
                                "config.json: not a ner-zoo export"),
    }


@pytest.mark.parametrize("damage", sorted(_onnx_damage()))
def test_damaged_onnx_folder_is_one_error_naming_the_file(onnx_folder, tmp_path, damage):
    import shutil
    import warnings

    import ner_zoo
    from ner_zoo.errors import CheckpointError

    folder = tmp_path / "o"
    shutil.copytree(onnx_folder, folder)
    harm, expected = _onnx_damage()[damage]
    harm(folder)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(CheckpointError) as e:
            ner_zoo.load(folder, device="cpu")
    line = str(e.value)
    assert "\n" not in line and str(folder) in line and expected in line, line
