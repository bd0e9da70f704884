"""A tiny random BERT (hidden 32, 2 layers, max 64 positions) with a fast WordPiece tokenizer, built offline.

The vocabulary holds the specials, every character of the sample corpus (alone and as ``##`` piece) and
its lower-cased words, so real words map to one sub-word and unseen words still split into characters.
``max_position_embeddings = 64`` keeps windowing reachable with short test sentences.

Tests use the session fixture ``tiny_bert_dir`` (``tests/tiny_bert.py``); benchmarks call :func:`build_tiny_bert`.
"""

from __future__ import annotations

from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
MAX_POSITIONS = 64


def sample_words() -> list[str]:
    words = set()
    for path in sorted(SAMPLE.glob("*.conll")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.startswith("-DOCSTART-"):
                words.add(line.split()[0].lower())
    return sorted(words)


def build_tiny_bert(directory: str | Path, seed: int = 0) -> Path:
    """Write config, random weights, ``vocab.txt`` and ``tokenizer.json`` to ``directory``; return it."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    words = sample_words()
    chars = sorted({c for w in words for c in w} | set("abcdefghijklmnopqrstuvwxyz0123456789.,;:!?'\"-()"))
    tokens = list(dict.fromkeys(SPECIALS + chars + [f"##{c}" for c in chars] + words))
    vocab = {t: i for i, t in enumerate(tokens)}
    tokenizer = BertTokenizer(vocab=vocab, do_lower_case=True, model_max_length=MAX_POSITIONS)
    tokenizer.save_pretrained(directory)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=MAX_POSITIONS, pad_token_id=0)
    BertModel(config).save_pretrained(directory)
    return directory
