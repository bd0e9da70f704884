"""The one inference path (issue 42, ``ner_zoo/training/prediction.py``): one batching function and one writer of
document context serve every entry point, so ``Tagger``, ``OnnxTagger``, ``ner-zoo predict``, ``serve`` and
``Trainer.predict`` give the same entities and scores on the same texts, with document context (MIN "+BERT",
``context: 1``) and without (BiLSTM-CRF)."""

from __future__ import annotations

import json
import signal

import pytest

from ner_zoo.training import prediction
from tiny_bert import tiny_bert_dir  # noqa: F401  (session fixture)

#: raw texts of several sentences each (each text is one document: its sentences are each other's context)
TEXTS = ["Falcon Energy and Orion Media agreed to merge, Raj Ivanov told reporters. Police in Accra arrested two men "
         "on Sunday. Prices fell sharply in Leeds and Graz, officials added.",
         "Sara Demir flew to Manila to watch the Danish, sources said. Yes. Maple Motors (Perth) reported a loss.",
         "Hana Lund won the Georgian final in Manila. The Peruvian delegation met Paul Larsen at Aurora Holdings."]
CASES = {"bilstm_crf": {}, "min_context": {"context": 1}}
STEPS = {"bilstm_crf": 20, "min_context": 24}  # enough to find entities in TEXTS (the sample corpus's words)


@pytest.fixture(scope="module")
def fitted(tiny_bert_dir, tmp_path_factory):  # noqa: F811
    """``case -> (checkpoint, ONNX folder)``: a tiny model fitted for two steps and exported as ONNX."""
    from battery import build
    from ner_zoo.api.export import export
    from ner_zoo.testing.tiny import tiny_model

    made = {}

    def get(case: str):
        if case not in made:
            if case == "min_context":
                encoder = {"class_path": "ner_zoo.modules.transformer.TransformerEncoder",
                           "init_args": {"model": str(tiny_bert_dir), "context": 1}}
                config = tiny_model("min", encoder=encoder)
            else:
                config = tiny_model("bilstm_crf")
            data = {"class_path": "ner_zoo.data.SampleCorpus", "init_args": {"batch_size": 8, "max_sentences": 16}}
            folder = tmp_path_factory.mktemp(case)
            build(config, data, folder, trainer={"max_steps": STEPS[case], "max_epochs": 20, "limit_val_batches": 0},
                  subcommand="fit")
            ckpt = sorted((folder / "ckpt").glob("*.ckpt"))[0]
            made[case] = ckpt, export(ckpt, folder / "onnx", format="onnx")
        return made[case]

    return get


def _chars(per_text) -> list[list[tuple]]:
    """Entities (objects or dicts) per text as ``(start, end, label)`` and their scores."""
    def get(e, key):
        return e[key] if isinstance(e, dict) else getattr(e, key)

    return [[(get(e, "start"), get(e, "end"), get(e, "label")) for e in ents] for ents in per_text], \
        [[get(e, "score") for e in ents] for ents in per_text]


def _serve(ckpt) -> list[list[dict]]:
    from ner_zoo.api.serve import NERAPI, PredictRequest

    api = NERAPI(str(ckpt), batch_size=4)  # the batches of the Tagger below: the same numbers
    handlers = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    try:
        api.setup("cpu")
    finally:  # setup makes this process an inference worker's: give the test process its handlers back
        signal.signal(signal.SIGTERM, handlers[0])
        signal.signal(signal.SIGINT, handlers[1])
    requests = [api.decode_request(PredictRequest(text=t)) for t in TEXTS[:2]] + \
        [api.decode_request(PredictRequest(text=TEXTS[2:]))]
    out = [api.encode_response(o)["entities"] for o in api.predict(requests)]
    return out[0:2] + out[2]


def _predict_cli(ckpt, tmp_path) -> list[list[dict]]:
    from ner_zoo.cli.main import main

    src, out = tmp_path / "in.txt", tmp_path / "out.jsonl"
    src.write_text("\n".join(TEXTS) + "\n")
    assert main(["predict", "--model", str(ckpt), "--input", str(src), "--output", str(out),
                 "--accelerator", "cpu", "--batch_size", "4"]) == 0
    return [json.loads(line)["entities"] for line in out.read_text().splitlines()]


@pytest.mark.parametrize("case", list(CASES))
def test_every_entry_point_gives_the_same_entities_and_scores(fitted, case, tmp_path, monkeypatch):
    import ner_zoo
    from ner_zoo.training.inference import load_model, predict

    calls = []
    batches = prediction.batches

    def counted(*args, **kwargs):
        calls.append(args[0])
        return batches(*args, **kwargs)

    monkeypatch.setattr(prediction, "batches", counted)  # every entry point cuts its batches here
    ckpt, onnx = fitted(case)
    tagger = ner_zoo.load(ckpt, device="cpu", batch_size=4)
    assert tagger.context_sentences == CASES[case].get("context", 0)
    want, want_scores = _chars(tagger(TEXTS))
    assert sum(map(len, want)) >= 2, "the tiny model finds entities to compare"
    for name, got in (("serve", _serve(ckpt)), ("predict", _predict_cli(ckpt, tmp_path))):
        ents, scores = _chars(got)
        assert ents == want, name
        assert scores == want_scores, name
    onnx_tagger = ner_zoo.load(onnx)
    assert onnx_tagger.context_sentences == tagger.context_sentences
    ents, scores = _chars(onnx_tagger(TEXTS))
    assert ents == want
    assert [s for r in scores for s in r] == pytest.approx([s for r in want_scores for s in r], abs=1e-4)

    # Trainer.predict, on the sentences the Tagger made of the texts
    from ner_zoo.api.text import sentences as split
    from ner_zoo.data.schema import Sentence

    sents = [Sentence([t.text for t in toks], doc_id=f"text{n}", index=i)
             for n, text in enumerate(TEXTS) for i, toks in enumerate(split(text))]
    expected = tagger.predict_sentences(sents)
    got = predict(load_model(ckpt), sents, batch_size=4, accelerator="cpu", with_scores=True)
    assert [p for p, _ in got] == [p for p, _ in expected]
    assert [s for _, sc in got for s in sc] == pytest.approx([s for _, sc in expected for s in sc], abs=1e-6)
    assert len(calls) >= 6  # Tagger (twice), serve, predict, ONNX, Trainer.predict


def test_context_comes_from_the_call_and_empty_sentences_are_skipped(fitted):
    """The one writer replaces the context of an earlier call unless it is kept; an empty sentence is not run."""
    import ner_zoo
    from ner_zoo.data.schema import Sentence

    tagger = ner_zoo.load(fitted("min_context")[0], device="cpu")
    (encoder,) = tagger.model.context_encoders()
    first = [Sentence(["Peter", "Blackburn"], doc_id="a", index=0), Sentence([], doc_id="a", index=1)]
    out = tagger.predict_sentences(first)
    assert out[1] == ([], []) and len(encoder.documents) == 1
    tagger.predict_sentences([Sentence(["Paris"], doc_id="b", index=0)])
    assert set(encoder.documents.tokens) == {encoder.documents.key(Sentence(["Paris"], doc_id="b", index=0))}
    tagger.predict_sentences(first, keep_context=True)
    assert len(encoder.documents) == 2


def test_batches_sorted_by_cost_within_a_sentence_and_a_token_budget():
    lengths = [5, 1, 9, 3, 3, 7, 2]
    got = list(prediction.batches(lengths, batch_size=3))
    assert got == [[1, 6, 3], [4, 0, 5], [2]]  # cheapest first, stable among equals
    assert sorted(i for b in got for i in b) == list(range(len(lengths)))
    budget = list(prediction.batches(lengths, batch_size=10, max_tokens=9))
    assert all(len(b) * max(lengths[i] for i in b) <= 9 or len(b) == 1 for b in budget)
    assert budget == [[1, 6, 3], [4], [0], [5], [2]]
    with pytest.raises(ValueError):
        list(prediction.batches(lengths, batch_size=0))


def test_the_cost_is_what_the_model_says():
    class Model:
        def bucket_lengths(self, sentences):
            return [10 * len(s.tokens) for s in sentences]

    from ner_zoo.data.schema import Sentence

    sents = [Sentence(["a", "b"]), Sentence(["c"])]
    assert prediction.costs(Model(), sents) == [20, 10]
    assert prediction.costs(object(), sents) == [2, 1]
