"""Training and prediction throughput (tokens/s) of the BiLSTM-CRF baseline, with peers, in one process.

The model and data come from ``configs/baselines/conll2003.yaml`` (sizes, char encoder, optimiser, batch
size 10 with length buckets, BIOES, GloVe-extended vocabulary; the vectors themselves are not loaded since
they do not change the cost). CoNLL-2003 is read from ``$NER_ZOO_DATA/conll2003``; when absent, the bundled
sample corpus is used (and the table says so). Peers on the same batches: the CNN-BiLSTM-CRF (char CNN,
Ma & Hovy 2016) and the BiLSTM-softmax tagger; ratios are peer / baseline tokens per second.

* train: a fixed number of training batches, each forward + CRF NLL + backward + clip 5 + SGD step,
  after warm-up batches; tokens are the batch's real (unpadded) words.
* decode: ``model.decode`` (Viterbi, spans) on evenly spaced test sentences (batches of ``eval_batch_size``,
  length-bucketed as in evaluation) under inference mode.
* predict: ``ner_zoo.training.inference.predict`` (what ``ner-zoo predict`` runs: Lightning ``Trainer.predict``,
  collation, decoding, re-ordering) on the same test sentences.

Models are interleaved per round; each number is the median over rounds. Peak RSS is the process maximum
(``ru_maxrss``) after each model's measurements; on CUDA the peak allocated GPU memory is shown too.

With ``--models A.yaml B.yaml ...`` the peers are the model sections of those configs instead (any model of
the zoo, e.g. the span models on GENIA), all on the data of ``--config``, each with its own collation
(span models add gold span tensors); the first is the reference of the ratios.

Usage: ``python benchmarks/throughput.py [--device cpu|cuda] [--threads 1] [--train-batches 40]
[--predict-sentences 640] [--rounds 3] [--config configs/baselines/conll2003.yaml] [--models ...]``
"""

from __future__ import annotations

import argparse
import copy
import importlib
import os
import platform
import resource
import statistics
import sys
import time
from pathlib import Path

import torch
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness import MIB, data_root, saved_activation_bytes, sync  # noqa: E402
from ner_zoo.data.datamodule import NERDataModule  # noqa: E402
from ner_zoo.training.base import NERModule  # noqa: E402

CHAR_CNN = {"class_path": "ner_zoo.modules.CharCNN", "init_args": {"char_dim": 30, "filters": 30}}


def load_data(config: dict) -> tuple[NERDataModule, str]:
    """The config's data module on the real corpus, or the sample corpus with the same options."""
    data = config["data"]
    module, _, name = data["class_path"].rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    kwargs = dict(data.get("init_args") or {})
    folder = data_root() / (cls.default_subdir or "")
    if cls.default_subdir and folder.is_dir() and all((folder / f).exists() for f in cls.files.values()):
        return cls(data_dir=str(folder), **kwargs), f"{name} ({folder})"
    from ner_zoo.data.corpora import SampleCorpus

    return SampleCorpus(**kwargs), f"sample corpus ({name} not found under {data_root()})"


def build_model(model_cfg: dict, vocabs: dict) -> NERModule:
    from jsonargparse import ArgumentParser

    model_cfg = copy.deepcopy(model_cfg)
    init = model_cfg.setdefault("init_args", {})
    init["vocabs"] = vocabs
    if isinstance(init.get("words"), dict):
        init["words"] = {**init["words"], "vectors": None}  # same vocabulary size; the vectors do not change the cost
    parser = ArgumentParser(exit_on_error=False)
    parser.add_subclass_arguments(NERModule, "model", required=True)
    instantiate = getattr(parser, "instantiate", None) or parser.instantiate_classes
    return instantiate(parser.parse_object({"model": model_cfg})).model


def baseline_model(threads: int) -> tuple[dict, NERDataModule, str, NERModule]:
    """``configs/baselines/conll2003.yaml``: its config, data module, corpus name and a seeded model in train mode,
    with ``threads`` torch threads (the set-up of the single-model CPU benchmarks)."""
    torch.set_num_threads(threads)
    config = yaml.safe_load((ROOT / "configs" / "baselines" / "conll2003.yaml").read_text())
    dm, corpus = load_data(config)
    torch.manual_seed(0)
    return config, dm, corpus, build_model(config["model"], dm.vocabs).train()


def variants(model_cfg: dict) -> dict[str, dict]:
    cnn = copy.deepcopy(model_cfg)
    cnn["init_args"]["char_encoder"] = CHAR_CNN
    softmax = copy.deepcopy(model_cfg)
    softmax["init_args"]["use_crf"] = False
    return {"BiLSTM-CRF (config)": model_cfg, "CNN-BiLSTM-CRF": cnn, "BiLSTM-softmax": softmax}


def _merge(base: dict, overlay: dict) -> dict:
    out = dict(base)
    for k, v in overlay.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _model_section(spec: str) -> dict:
    """The ``model`` section of ``a.yaml+b.yaml+...`` (later files override earlier ones, as repeated --config)."""
    model: dict = {}
    for path in spec.split("+"):
        model = _merge(model, yaml.safe_load(Path(path).read_text()).get("model") or {})
    return model


def _name(spec: str) -> str:
    return " + ".join(Path(p).parent.name + "/" + Path(p).stem for p in spec.split("+"))


def _train_order(dm: NERDataModule) -> list[int]:
    """Sentence indices in the order of the first training epoch (length buckets, seeded shuffle)."""
    loader = dm._loader(dm.sentences("train"), train=True, collate=lambda items: [i for i, _ in items])
    return [i for batch in loader for i in batch]


def train_time(model, batches, device, clip: float) -> float:
    model.to(device).train()  # a Trainer's teardown (predict_time) leaves the model on the CPU
    optimizer = model.optimizer_factory(model.parameter_groups())
    sync(device)
    t0 = time.perf_counter()
    for batch in batches:
        loss = model.compute_loss(batch.to(device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
    sync(device)
    return time.perf_counter() - t0


def decode_time(model, batches, device) -> float:
    model.to(device).eval()
    sync(device)
    t0 = time.perf_counter()
    with torch.inference_mode():
        for batch in batches:
            model.decode(batch.to(device))
    sync(device)
    return time.perf_counter() - t0


def predict_time(model, sentences, batch_size, device) -> float:
    from ner_zoo.training.inference import predict

    accelerator = "gpu" if device.type == "cuda" else "cpu"
    t0 = time.perf_counter()
    predict(model, sentences, batch_size=batch_size, accelerator=accelerator)
    return time.perf_counter() - t0


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", type=Path, default=ROOT / "configs" / "baselines" / "conll2003.yaml")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    p.add_argument("--train-batches", type=int, default=40)
    p.add_argument("--predict-sentences", type=int, default=640, help="evenly spaced test sentences")
    p.add_argument("--warmup", type=int, default=3, help="training batches before timing")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batch-size", type=int, help="training and prediction batch size (default: the config's)")
    p.add_argument("--models", nargs="*", help="configs whose models are compared, an overlay joined with + "
                   "(base.yaml+ablations/x.yaml); default: the BiLSTM-CRF of --config and two variants")
    a = p.parse_args(argv)
    print(__import__('host').host_line(), flush=True)  # benchmarks/host.py: which machine
    torch.set_num_threads(a.threads)
    device = torch.device(a.device)
    config = yaml.safe_load(a.config.read_text())
    clip = float(config.get("trainer", {}).get("gradient_clip_val") or 5.0)

    t0 = time.perf_counter()
    if a.batch_size:
        config["data"].setdefault("init_args", {}).update(batch_size=a.batch_size, eval_batch_size=a.batch_size)
    dm, corpus = load_data(config)
    vocabs = dm.vocabs
    if a.models:
        configs = {_name(spec): _model_section(spec) for spec in a.models}
    else:
        configs = variants(config["model"])
    train_split = dm.sentences("train")
    train_ids = _train_order(dm)[:(a.warmup + a.train_batches) * dm.batch_size]  # keep corpus indices (HCR memory)
    test = dm.sentences("test")
    step = max(1, len(test) // a.predict_sentences)  # evenly spaced: the same length mix as the whole split
    predict_sents = test[::step][:a.predict_sentences]
    load_s = time.perf_counter() - t0

    models, batches = {}, {}
    for name, cfg in configs.items():
        torch.manual_seed(0)
        model = build_model(cfg, vocabs)
        # as at fit: pretrained vectors, HCR's label embeddings and memory index, document context (+ test)
        model.prepare(train_split, {})
        model.add_context(test)
        model = model.to(device)
        collate = model.collator
        chunks = [train_ids[i:i + dm.batch_size] for i in range(0, len(train_ids), dm.batch_size)]
        train = [collate([(i, train_split[i]) for i in c]) for c in chunks]
        evals = list(dm._loader(predict_sents, train=False, collate=collate))
        batches[name] = (train[:a.warmup], train[a.warmup:], evals)
        train_time(model, train[:a.warmup], device, clip)
        models[name] = model
    _, timed, eval_batches = next(iter(batches.values()))
    train_tokens = sum(int(b.mask.sum()) for b in timed)
    eval_tokens = sum(int(b.mask.sum()) for b in eval_batches)
    times = {name: {"train": [], "decode": [], "predict": []} for name in models}
    rss, gpu, activations = {}, {}, {}
    for name, model in models.items():  # device-independent memory: tensors saved for backward, largest batch
        model.train()
        largest = max(batches[name][1], key=lambda b: int(b.mask.sum()))
        activations[name] = saved_activation_bytes(model, largest.to(device)) / MIB
    for _ in range(a.rounds):
        for name, model in models.items():
            _, timed, eval_batches = batches[name]
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)
            times[name]["train"].append(train_time(model, timed, device, clip))
            times[name]["decode"].append(decode_time(model, eval_batches, device))
            times[name]["predict"].append(predict_time(model, predict_sents, dm.eval_batch_size, device))
            rss[name] = peak_rss_mib()
            if device.type == "cuda":
                gpu[name] = max(gpu.get(name, 0.0), torch.cuda.max_memory_allocated(device) / 2**20)

    hw = torch.cuda.get_device_name(device) if device.type == "cuda" else \
        f"{platform.processor() or platform.machine()}, {a.threads} thread(s) of {os.cpu_count()} cores"
    print(f"## Throughput on {corpus}\n")
    print(f"Device: {hw}; torch {torch.__version__}. Training: {a.train_batches} batches of "
          f"{dm.batch_size} sentences ({train_tokens} tokens) after {a.warmup} warm-up batches; prediction: "
          f"{len(predict_sents)} test sentences ({eval_tokens} tokens) in batches of {dm.eval_batch_size}; "
          f"median of {a.rounds} interleaved rounds. Data loading and vocabularies: {load_s:.1f} s.\n")
    cols = ["model", "train tok/s", "ratio", "decode tok/s", "ratio", "predict tok/s", "ratio", "activations MiB",
            "peak RSS MiB"]
    if gpu:
        cols.append("peak GPU MiB")
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    base = None
    for name in models:
        rates = {k: n / statistics.median(times[name][k]) for k, n in
                 (("train", train_tokens), ("decode", eval_tokens), ("predict", eval_tokens))}
        base = base or rates
        row = [name]
        for k in ("train", "decode", "predict"):
            row += [f"{rates[k]:,.0f}", f"{rates[k] / base[k]:.2f}"]
        row += [f"{activations[name]:,.1f}", f"{rss[name]:,.0f}"]
        if gpu:
            row.append(f"{gpu[name]:,.0f}")
        print("| " + " | ".join(row) + " |")
    print("\nratio: tokens/s relative to the first model (above 1: faster). activations: bytes of the tensors "
          "autograd saves for backward on the largest timed training batch (per model, any device). Peak RSS is "
          "the process maximum so far (monotone down the table); peak GPU memory is per model.")


if __name__ == "__main__":
    main()
