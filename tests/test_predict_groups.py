"""``ner-zoo predict`` hands a file's sentences to the tagger in groups of many batches (sorted by length
together: less padding), and a stream in groups of one batch (answered as it comes)."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest

from ner_zoo.cli.predict import GROUP_BATCHES, records, write_predictions


class CountingTagger:
    def __init__(self):
        self.calls: list[int] = []
        self.model = SimpleNamespace(is_pos=False)

    def predict_sentences(self, sentences, keep_context=False, context=()):
        self.calls.append(len(sentences))
        return [([], []) for _ in sentences]


@pytest.mark.parametrize("stream", [False, True])
def test_predict_groups(tmp_path, stream):
    path = tmp_path / "in.txt"
    path.write_text("".join(f"Sentence number {i} is here.\n" for i in range(100)), encoding="utf-8")
    recs, _, labelled = records(path, "text", split=True)
    tagger = CountingTagger()
    out = io.StringIO()
    n = write_predictions(out, recs, tagger, "jsonl", labelled, None, batch_size=4, flush=stream)
    assert n == 100 and sum(tagger.calls) == 100
    assert max(tagger.calls) == (4 if stream else min(100, 4 * GROUP_BATCHES))


@pytest.mark.parametrize("need", [0, 1, 3, 7, 100])
def test_lookahead_gives_each_group_the_sentences_after_it(need):
    from ner_zoo.cli.predict import lookahead

    recs = [SimpleNamespace(sentences=[k] * (1 + k % 3)) for k in range(12)]
    groups = [recs[i:i + 2] for i in range(0, 12, 2)]
    got = list(lookahead(iter(groups), need))
    assert [g for g, _ in got] == groups
    for k, (_, following) in enumerate(got):
        after = [r for g in groups[k + 1:] for r in g]
        assert following == after[:len(following)]  # the records right after the group, in order
        assert sum(len(r.sentences) for r in following) >= min(need, sum(len(r.sentences) for r in after))
        assert need or not following  # no context read: each group as soon as it is read
