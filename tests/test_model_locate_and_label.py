"""Locate-and-Label: the generic battery (nested fixture, flat sample corpus), seeds and regression targets,
per-example soft weights, illegal adjustments, decoding, and recovering entities longer than every seed."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch

from battery import ModelBattery, build, setup_for_fit
from ner_zoo.testing.tiny import tiny_model
from ner_zoo.data.readers import read_nested_json
from ner_zoo.data.schema import Sentence, Span
from ner_zoo.models.locate_and_label import LocateAndLabel, soft_weights
from ner_zoo.modules.span_losses import focal_loss
from tiny_bert import tiny_bert_dir  # noqa: F401  (session fixture)

NESTED_DIR = Path(__file__).resolve().parent / "fixtures" / "nested"
DEV = read_nested_json(NESTED_DIR / "dev.jsonlines")
NESTED_DATA = {"class_path": "ner_zoo.data.JsonDataModule",
               "init_args": {"data_dir": str(NESTED_DIR), "train_file": "train.jsonlines",
                             "dev_file": "dev.jsonlines", "test_file": "test.jsonlines", "batch_size": 8}}
TINY = tiny_model("locate_and_label")


class TestLocateAndLabel(ModelBattery):
    model = TINY
    data = NESTED_DATA


class TestLocateAndLabelFlat(ModelBattery):
    """Flat sample corpus (flat decoding), the code's ``sigmoid x length`` regressor, no chars."""

    model = {**TINY, "init_args": {**TINY["init_args"], "char_encoder": None, "regressor_norm": "sigmoid_x_len",
                                   "duplicates": "as_released"}}



def _model(tmp_path, data=NESTED_DATA, **init) -> LocateAndLabel:
    return build({**TINY, "init_args": {**TINY["init_args"], **init}}, data, tmp_path).model.eval()


def _fix_head(head: torch.nn.Sequential, bias: list[float]) -> None:
    """Make an MLP head output the constant ``bias``."""
    with torch.no_grad():
        head[-1].weight.zero_()
        head[-1].bias.copy_(torch.tensor(bias))


def test_soft_weights_per_example():
    iou = torch.tensor([1.0, 0.8, 0.5, 0.0, 0.75])
    hit = torch.tensor([True, True, False, False, True])
    torch.testing.assert_close(soft_weights(iou, hit, 1.0), torch.tensor([1.0, 0.8, 0.5, 1.0, 0.75]))
    torch.testing.assert_close(soft_weights(iou, hit, 2.0), torch.tensor([1.0, 0.64, 0.25, 1.0, 0.5625]))
    assert soft_weights(iou, hit, 0.0).eq(1).all()  # eta = 0: hard examples


def test_training_seeds_and_regression_targets(tmp_path):
    model = _model(tmp_path, train_widths=[1, 2, 3, 4], neg_ratio=None)
    label = model.vocabs.labels[0]
    sents = [Sentence(["w"] * 8, [Span(0, 5, label), Span(6, 7, label)]), Sentence(["w"] * 3)]
    batch = model.collate(list(enumerate(sents)))
    s = model.training_seeds(batch)
    seeds, mask = s["seeds"][0][s["mask"][0]].tolist(), s["seeds"][0]
    assert seeds.count([0, 5]) == 1 and seeds.count([6, 7]) == 1  # gold spans are seeds, once
    assert len(seeds) == 8 + 7 + 6 + 5 + 1  # widths 1-4 on 8 tokens + the width-5 gold
    row = {tuple(sp): i for i, sp in enumerate(mask.tolist()) if s["mask"][0, i]}
    i = row[(1, 5)]  # IoU 4/5 = 0.8 > 0.7: positive, targets (-1, 0)
    assert s["positive"][0, i] and s["gold_span"][0, i].tolist() == [0, 5]
    assert (s["gold_span"][0, i] - s["seeds"][0, i]).tolist() == [-1, 0]
    assert abs(float(s["iou"][0, i]) - 0.8) < 1e-6
    j = row[(1, 4)]  # IoU 3/5: negative, still paired with gold 0 (for the classifier's online targets)
    assert not s["positive"][0, j] and int(s["gold_index"][0, j]) == 0
    assert not s["positive"][0, row[(5, 6)]] and int(s["gold_index"][0, row[(5, 6)]]) == -1
    assert s["mask"][1].sum() == 3 + 2 + 1 and not s["positive"][1].any()


def test_negative_sampling_ratio_and_resampling(tmp_path):
    model = _model(tmp_path, train_widths=[1, 2, 3, 4])
    label = model.vocabs.labels[0]
    batch = model.collate([(0, Sentence(["w"] * 20, [Span(3, 4, label)]))])
    s = model.training_seeds(batch)
    pos, n = int(s["positive"].sum()), int(s["mask"].sum())
    assert pos == 1 and n - pos == 5 * pos + 2
    again = model.training_seeds(batch)["seeds"]
    assert torch.equal(again, s["seeds"])  # seeded: same step, same sample
    model.net.step = 1  # the next step draws another sample (the task module tells the network)
    try:
        assert not torch.equal(model.training_seeds(batch)["seeds"], s["seeds"])
    finally:
        model.net.step = 0


def test_losses_use_per_example_weights(tmp_path):
    model = _model(tmp_path, train_widths=[1, 2, 3], eta=1.0)
    label = model.vocabs.labels[0]
    batch = model.collate([(0, Sentence(["a", "b", "c", "d", "e", "f"], [Span(1, 4, label), Span(1, 3, label)])),
                           (1, Sentence(["a", "b", "c"], [Span(0, 2, label)]))])
    terms = model.loss_terms(batch)
    s = model.training_seeds(batch)
    p = model.propose(model.token_states(batch), s["seeds"], s["mask"], batch.lengths)
    m = s["mask"]
    w = soft_weights(s["iou"], s["positive"], 1.0)[m]
    assert (w < 1).any()  # partial overlaps are soft examples
    logits = torch.stack([torch.zeros_like(p.filter_logits), p.filter_logits], -1)[m]
    fl = focal_loss(logits, s["positive"][m].long(), 2.0)
    torch.testing.assert_close(terms["filter"], (fl * w).sum() / m.sum())  # mean of w_i * FL_i, no broadcast
    assert all(torch.isfinite(v) for v in terms.values())


def test_illegal_adjustments_are_excluded(tmp_path):
    model = _model(tmp_path, filter_threshold=0.0, score_threshold=0.0, out_of_range="illegal")  # the code
    label = model.vocabs.labels[0]
    batch = model.collate([(0, Sentence(["a", "b", "c", "d", "e"], [Span(1, 3, label)]))])
    _fix_head(model.classifier, [-5.0] + [5.0] * (model.num_classes - 1))
    for bias in ([2.0, -2.0], [0.0, 9.0], [-9.0, 0.0]):  # empties every seed / past the end / before the start
        _fix_head(model.regressor, bias)
        s = model.training_seeds(batch)
        p = model.propose(model.token_states(batch), s["seeds"], s["mask"], batch.lengths)
        assert p.illegal[s["mask"]].all() and torch.equal(p.adjusted, s["seeds"])  # reverted to the seeds
        assert model.loss_terms(batch)["classifier"] == 0  # nothing left for the classifier loss
        assert model.decode(batch) == [[]]  # nor for decoding
    _fix_head(model.regressor, [0.0, 0.0])
    assert model.decode(batch) != [[]]


def test_without_regressor_the_seeds_are_the_proposals(tmp_path):
    """Table 3 "w/o regressor": no head, offsets 0 (a zero loss weight would still leave a random regressor
    that moves every seed), no regression loss."""
    model = _model(tmp_path, use_regressor=False, train_widths=[1, 2])
    label = model.vocabs.labels[0]
    batch = model.collate([(0, Sentence(["a", "b", "c", "d", "e"], [Span(1, 4, label)]))])
    assert model.regressor is None
    s = model.training_seeds(batch)
    p = model.propose(model.token_states(batch), s["seeds"], s["mask"], batch.lengths)
    assert torch.equal(p.adjusted, s["seeds"]) and not p.offsets.any() and not p.illegal.any()
    terms = model.train().loss_terms(batch)
    assert terms["offset"] == 0 and terms["overlap"] == 0 and terms["filter"] > 0
    model.compute_loss(batch).backward()


def test_without_filter_every_legal_span_is_classified(tmp_path):
    """Table 3 "w/o filter": no head, no filter loss, every legal span reaches the classifier."""
    model = _model(tmp_path, use_filter=False, filter_threshold=0.99)
    label = model.vocabs.labels[0]
    batch = model.collate([(0, Sentence(["a", "b", "c", "d", "e"], [Span(1, 4, label)]))])
    assert model.filter is None
    _fix_head(model.regressor, [0.0, 0.0])
    p, filtered, _ = model.eval_proposals(batch)
    assert int(filtered.sum()) == 5 + 4 + 3 + 2  # widths 1-4 on 5 tokens, none filtered out
    terms = model.train().loss_terms(batch)
    assert terms["filter"] == 0 and terms["classifier"] > 0
    model.compute_loss(batch).backward()


def test_out_of_range_boundaries_are_clamped_by_default(tmp_path):
    """Eq. 6-7: a boundary past the sentence is clamped into it (the code instead drops the span)."""
    model = _model(tmp_path, filter_threshold=0.0, score_threshold=0.0)
    label = model.vocabs.labels[0]
    batch = model.collate([(0, Sentence(["a", "b", "c", "d", "e"], [Span(1, 3, label)]))])
    _fix_head(model.regressor, [-9.0, 9.0])  # every seed grows past both ends
    s = model.training_seeds(batch)
    p = model.propose(model.token_states(batch), s["seeds"], s["mask"], batch.lengths)
    m = s["mask"]
    assert not p.illegal[m].any() and (p.adjusted[m] == torch.tensor([0, 5])).all()
    _fix_head(model.regressor, [2.0, -2.0])  # empties every seed: illegal under either policy
    p = model.propose(model.token_states(batch), s["seeds"], s["mask"], batch.lengths)
    assert p.illegal[m].all()


def test_classifier_gamma_is_separate_from_the_filter_gamma(tmp_path):
    """Eq. 12 focal filter loss with Eq. 16 cross-entropy classifier (the default) is expressible."""
    model = _model(tmp_path, gamma=2.0, classifier_gamma=0.0)
    label = model.vocabs.labels[0]
    batch = model.collate([(0, Sentence(["a", "b", "c", "d", "e", "f"], [Span(1, 4, label)]))])
    torch.manual_seed(0)
    terms = model.loss_terms(batch)
    model.net.hparams.classifier_gamma = 2.0  # what the network reads
    torch.manual_seed(0)
    focal = model.loss_terms(batch)
    assert terms["filter"] == focal["filter"] and focal["classifier"] < terms["classifier"]


def test_crossing_policies(tmp_path):
    """(0,3) .9 and (2,5) .6 cross; (3,5) .2 crosses nothing kept. ``off`` (paper) keeps both crossing spans,
    ``after_threshold`` the better one, ``code`` (before delta) neither."""
    spans = torch.tensor([[[0, 3], [2, 5], [3, 5]]])
    labels, scores = torch.tensor([[1, 1, 1]]), torch.tensor([[0.9, 0.6, 0.2]])
    keep = torch.ones(1, 3, dtype=torch.bool)
    kept = {}
    for policy in ("off", "after_threshold", "code"):
        model = _model(tmp_path / policy, score_threshold=0.5, nms_iou=0.9, crossing=policy)
        kept[policy] = model.select_proposals(spans, labels, scores, keep)[0][0].tolist()
    assert kept == {"off": [True, True, False], "after_threshold": [True, False, False],
                    "code": [False, False, False]}


@pytest.mark.parametrize("corpus, widths", [("ace2004", [1, 2, 3, 4, 5, 6, 7, 9, 11, 13, 15]),
                                            ("genia", list(range(1, 11)))])
def test_configs_use_the_papers_seed_widths_and_decoding(corpus, widths):
    """Table 6 windows (ACE04 [1-7, 9, 11, 13, 15], GENIA [1-10]); Eq. 16 CE classifier; no crossing removal."""
    import yaml

    path = Path(__file__).resolve().parents[1] / "configs" / "locate_and_label" / f"{corpus}.yaml"
    init = yaml.safe_load(path.read_text())["model"]["init_args"]
    assert init["train_widths"] == widths and init["max_width"] == widths[-1]
    decoding = (init["gamma"], init["classifier_gamma"], init["crossing"], init["out_of_range"])
    assert decoding == (2.0, 0.0, "off", "clamp")


def test_select_proposals_hand_worked(tmp_path):
    """The released evaluator's merging (``duplicates: first``: the first seed stands for its span)."""
    model = _model(tmp_path, score_threshold=0.5, nms_decay=0.5, nms_iou=0.6, crossing="code", duplicates="first")
    spans = torch.tensor([[[0, 2], [0, 2], [0, 2], [4, 6], [1, 3], [6, 9], [6, 8], [9, 10]]])
    labels = torch.tensor([[1, 1, 2, 1, 1, 1, 1, 1]])
    scores = torch.tensor([[0.6, 0.9, 0.95, 0.8, 0.7, 0.9, 0.8, 0.4]])
    keep = torch.tensor([[True] * 7 + [True]])
    kept, final = model.select_proposals(spans, labels, scores, keep)
    # (0,2) x3 merge into the first (score 0.6); it crosses (1,3): both dropped. (6,9) and (6,8): IoU 2/3 > 0.6,
    # (6,8) decays 0.8 -> 0.4 < 0.5. (9,10) is below delta. (4,6) stays.
    assert kept[0].nonzero().flatten().tolist() == [3, 5]
    model.net.hparams.duplicate_score = "repeat"  # the code's evaluator: 0.6 * 2 same-label duplicates
    spans2 = torch.tensor([[[0, 2], [0, 2], [3, 4]]])
    kept, final = model.select_proposals(spans2, torch.tensor([[1, 1, 1]]), torch.tensor([[0.3, 0.9, 0.2]]),
                                         torch.ones(1, 3, dtype=torch.bool))
    assert kept[0].tolist() == [True, False, False] and abs(float(final[0, 0]) - 0.6) < 1e-6


def test_regressor_reaches_beyond_seed_widths_decoding(tmp_path):
    """Fixed heads: every seed is extended by 2 tokens, so width-3 seeds become width-5 entities."""
    model = _model(tmp_path, train_widths=[1, 2, 3], max_width=3, filter_threshold=0.0, score_threshold=0.0)
    _fix_head(model.regressor, [0.0, 2.0])
    _fix_head(model.classifier, [-5.0] + [5.0] * (model.num_classes - 1))
    batch = model.collate([(0, Sentence(["a"] * 5))])
    preds = model.decode(batch)[0]  # only (0,3) -> (0,5) and the spans it contains survive crossing removal
    assert Span(0, 5, model.vocabs.labels[0]) in preds and max(sp.end - sp.start for sp in preds) == 5


def _synthetic(path: Path, n: int, rng: random.Random) -> None:
    filler, names = ["the", "of", "in", "was", "and", "a", "to", "by"], [f"N{i}" for i in range(6)]
    with path.open("w") as f:
        for i in range(n):
            left, right = rng.randint(0, 3), rng.randint(1, 3)
            tokens = rng.choices(filler, k=left) + rng.choices(names, k=5) + rng.choices(filler, k=right)
            mention = {"start": left, "end": left + 5, "entity_type": "LONG"}
            f.write(json.dumps({"tokens": tokens, "doc_id": f"d{i}", "sent_id": f"d{i}-0",
                                "entity_mentions": [mention]}) + "\n")


def test_regressor_recovers_entities_longer_than_every_seed(tmp_path):
    """Train a tiny model on entities of length 5 with seeds of widths {1, 2, 3} only (alpha1 = 0.5 makes the
    width-3 seeds inside an entity positives); it must predict length-5 spans it never enumerated."""
    torch.manual_seed(0)
    rng = random.Random(0)
    for split, n in (("train", 48), ("dev", 8), ("test", 8)):
        _synthetic(tmp_path / f"{split}.jsonlines", n, rng)
    data = {"class_path": "ner_zoo.data.JsonDataModule",
            "init_args": {"data_dir": str(tmp_path), "train_file": "train.jsonlines", "dev_file": "dev.jsonlines",
                          "test_file": "test.jsonlines", "batch_size": 16}}
    cli = build({**TINY, "init_args": {**TINY["init_args"], "char_encoder": None, "max_width": 3, "alpha1": 0.5,
                                       "offset_weight": 1.0, "overlap_weight": 1.0, "dropout": 0.0,
                                       "embed_dropout": 0.0}}, data, tmp_path / "run")
    model, dm = cli.model.train(), cli.datamodule
    dm.setup("fit")
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(40):
        for batch in dm.train_dataloader():
            opt.zero_grad()
            model.compute_loss(batch).backward()
            opt.step()
    model.eval()
    sents = dm.sentences("dev")
    preds = model.decode(model.collate(list(enumerate(sents))))
    assert max((sp.end - sp.start for p in preds for sp in p), default=0) == 5
    hits = sum(sp in set(s.spans) for s, p in zip(sents, preds) for sp in p)
    assert hits >= len(sents) // 2



def test_transformer_features_with_document_context(tmp_path, tiny_bert_dir):  # noqa: F811
    transformer = {"class_path": "ner_zoo.modules.transformer.TransformerEncoder",
                   "init_args": {"model": str(tiny_bert_dir), "pooling": "max", "context": 1}}
    cli = build({**TINY, "init_args": {**TINY["init_args"], "encoder": transformer}}, NESTED_DATA, tmp_path)
    setup_for_fit(cli)
    model, dm = cli.model, cli.datamodule
    assert len(model.tokens.encoder.documents) == len(dm.sentences("train")) + len(dm.sentences("dev"))
    batch = next(iter(dm.train_dataloader()))
    loss = model.train().compute_loss(batch)
    loss.backward()
    assert torch.isfinite(loss) and model.lstm.lstm.input_size == 16 + 30 + model.tokens.encoder.output_dim


def test_dropout_only_on_embeddings_and_each_head_input(tmp_path, tiny_bert_dir):  # noqa: F811
    """The official placement (review H1): prop_drop on GloVe/char/POS only, never on the transformer
    features or the BiLSTM output, and once on each head's input."""
    frozen = {"class_path": "ner_zoo.modules.transformer.TransformerEncoder",
              "init_args": {"model": str(tiny_bert_dir), "freeze": True}}  # frozen: no BERT-internal dropout
    model = _model(tmp_path, encoder=frozen, embed_dropout=0.0, dropout=0.9)
    batch = model.collate(list(enumerate(DEV[:4])))
    with torch.no_grad():
        torch.testing.assert_close(model.train().token_states(batch), model.eval().token_states(batch))
    for head in (model.filter, model.regressor, model.classifier):
        assert [type(m) for m in head].count(torch.nn.Dropout) == 1 and isinstance(head[0], torch.nn.Dropout)
    inputs = _model(tmp_path, encoder=frozen, lstm_hidden=0, embed_dropout=0.9)  # h = the BiLSTM's inputs
    d = inputs.tokens.encoder.output_dim
    with torch.no_grad():
        train, evaluated = inputs.train().token_states(batch), inputs.eval().token_states(batch)
    torch.testing.assert_close(train[..., -d:], evaluated[..., -d:])  # transformer features kept
    assert not torch.equal(train[..., :-d], evaluated[..., :-d])  # embeddings dropped


def _record(root: Path) -> dict:
    (path,) = list(root.rglob("results.json"))
    return json.loads(path.read_text())


def test_missing_pos_feature_warns_once_and_is_recorded(tmp_path):
    """Review M1: every config asks for POS, no corpus has it; say so instead of silently dropping it."""
    with pytest.warns(UserWarning, match="pos_feature='pos' is configured but the data has no such") as caught:
        build(TINY, NESTED_DATA, tmp_path, subcommand="fit",
              trainer={"max_epochs": 1, "limit_train_batches": 1, "limit_val_batches": 1})
    assert sum("pos_feature" in str(w.message) for w in caught) == 1  # once, though setup runs per stage
    assert _record(tmp_path)["features_used"] == []


def test_missing_feature_column_is_one_line_naming_the_record():
    from ner_zoo.data import JsonDataModule
    from ner_zoo.errors import DataFormatError

    dm = JsonDataModule(**{**NESTED_DATA["init_args"], "features": ["pos"]})
    with pytest.raises(DataFormatError, match=r"train\.jsonlines#1: feature column 'pos' is missing"):
        dm.vocabularies


def test_pos_column_predicted_by_a_zoo_checkpoint(tmp_path):
    """``predicted_columns`` adds a column from any zoo checkpoint (here a tiny NER tagger's IOB2 tags),
    so Locate-and-Label's x^pos can be supplied offline."""
    tagger = {"class_path": "ner_zoo.models.BiLSTMCRF",
              "init_args": {"words": {"dim": 8}, "lstm_hidden": 8, "char_encoder": None,
                            "optimizer": {"class_path": "torch.optim.Adam", "init_args": {"lr": 0.01}}}}
    from battery import SAMPLE_DATA

    fitted = build(tagger, SAMPLE_DATA, tmp_path / "tagger", subcommand="fit", trainer={"max_epochs": 1})
    ckpt = fitted.trainer.checkpoint_callback.best_model_path
    data = {**NESTED_DATA, "init_args": {**NESTED_DATA["init_args"], "features": ["pos"],
                                         "predicted_columns": {"pos": ckpt}}}
    cli = build(TINY, data, tmp_path / "lnl", subcommand="fit",
                trainer={"max_epochs": 1, "limit_train_batches": 1, "limit_val_batches": 1})
    sents = cli.datamodule.sentences("test")
    assert all(len(s.columns["pos"]) == len(s) for s in sents)
    assert cli.model.tokens.feature_names == ["pos"] and cli.model.features_used == ["pos"]
    record = _record(tmp_path / "lnl")
    assert record["features_used"] == ["pos"] and record["data_notes"]["predicted_columns"] == {"pos": ckpt}


def test_proposals_per_gold_logged(tmp_path):
    cli = build(TINY, NESTED_DATA, tmp_path, trainer={"max_epochs": 1}, subcommand="validate")
    model, metrics = cli.model, cli.trainer.callback_metrics
    assert "val/proposals_per_gold" in metrics and "val/f1/len=1" in metrics
    loader = cli.datamodule.val_dataloader()
    proposals = sum(model.count_proposals(b) for b in loader)
    entities = sum(len(s.spans) for s in cli.datamodule.sentences("dev"))
    assert float(metrics["val/proposals_per_gold"]) == pytest.approx(proposals / entities)


def alg1_literal(proposals, u, k, delta):
    """Shen et al. 2021, Alg. 1 and Eq. 18, line by line (float32 as the model): sort S by score; take the first
    s_i into O; decay every remaining s_j with IoU(s_i, s_j) >= k by u and re-insert it by score; repeat. The
    entities are the (l, r, y) of O with score > delta."""
    import numpy as np

    f32 = np.float32
    S = sorted(((l, r, y, f32(sc)) for l, r, y, sc in proposals), key=lambda p: -p[3])
    O = []
    while S:
        s_i = S.pop(0)
        O.append(s_i)
        for j, (l, r, y, sc) in enumerate(S):
            inter = max(0, min(r, s_i[1]) - max(l, s_i[0]))
            iou = f32(inter) / f32((r - l) + (s_i[1] - s_i[0]) - inter)
            S[j] = (l, r, y, f32(sc * f32(u)) if iou >= f32(k) else sc)
        S.sort(key=lambda p: -p[3])
    return {(l, r, y) for l, r, y, sc in O if sc > f32(delta)}


def test_duplicates_follow_the_papers_algorithm(tmp_path):
    """Default decoding equals a literal Alg. 1 on random proposals, many of them duplicates (several seeds
    regressed onto one span, with the same or another label), and the review's two probes come out as the paper's."""
    import random

    model = _model(tmp_path, score_threshold=0.55, nms_decay=0.9, nms_iou=0.6)
    probe = torch.tensor([[[0, 2], [0, 2]]]), torch.ones(1, 2, dtype=torch.bool)
    kept, final = model.select_proposals(probe[0], torch.tensor([[1, 1]]), torch.tensor([[0.5, 0.9]]), probe[1])
    assert kept[0].tolist() == [False, True] and float(final[0, 1]) == pytest.approx(0.9)  # kept at 0.9
    kept, _ = model.select_proposals(probe[0], torch.tensor([[1, 2]]), torch.tensor([[0.6, 0.95]]), probe[1])
    assert kept[0].tolist() == [False, True]  # label 2 (0.6 decays to 0.54 < delta)
    assert model.hparams.duplicates == "paper"
    rng = random.Random(0)
    for trial in range(200):
        n = rng.randint(1, 14)
        props = []
        for _ in range(n):
            start = rng.randint(0, 5)
            props.append((start, start + rng.randint(1, 3), rng.randint(1, 2), rng.uniform(0.3, 1.0)))
        spans = torch.tensor([[[l, r] for l, r, _, _ in props]])
        labels = torch.tensor([[y for _, _, y, _ in props]])
        scores = torch.tensor([[sc for *_, sc in props]], dtype=torch.float32)
        kept, _ = model.select_proposals(spans, labels, scores, torch.ones(1, n, dtype=torch.bool))
        ours = {props[i][:3] for i in kept[0].nonzero().flatten().tolist()}
        assert len(ours) == int(kept.sum())  # one entity per (span, label)
        assert ours == alg1_literal(props, 0.9, 0.6, 0.55), (trial, props)


def test_duplicates_as_released_is_first_seed_times_count(tmp_path):
    model = _model(tmp_path, score_threshold=0.55, nms_decay=0.9, nms_iou=0.6, duplicates="as_released")
    spans, keep = torch.tensor([[[0, 2], [0, 2], [0, 2]]]), torch.ones(1, 3, dtype=torch.bool)
    kept, final = model.select_proposals(spans, torch.tensor([[1, 1, 2]]), torch.tensor([[0.5, 0.9, 0.95]]), keep)
    assert kept[0].tolist() == [True, False, False] and float(final[0, 0]) == pytest.approx(1.0)  # 0.5 x 2
    with pytest.raises(ValueError, match="needs duplicates: first"):
        _model(tmp_path / "bad", duplicate_score="sum")
