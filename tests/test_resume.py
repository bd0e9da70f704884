"""Kill and resume: a fit stopped mid-epoch (``max_steps``) with a step checkpoint, resumed with ``ckpt_path``,
ends with the same metrics and weights as an uninterrupted fit (same seed, deterministic mode).

What makes it exact: Lightning restores model, optimiser, scheduler and loop counters; the training loader
(:class:`~ner_zoo.data.batching.ResumableDataLoader`) skips the batches of the interrupted epoch already
seen; :class:`~ner_zoo.training.base.NERModule` checkpoints the random state (dropout masks).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch

from battery import build
from ner_zoo.data.batching import IndexedDataset, ResumableDataLoader, ShardSampler
from test_cli import MODEL

DATA = {"class_path": "ner_zoo.data.SampleCorpus", "init_args": {"batch_size": 8, "max_sentences": 44}}
STEPS_PER_EPOCH = 6  # 44 sentences in batches of 8
SCHEDULED = copy.deepcopy(MODEL)
SCHEDULED["init_args"]["lr_scheduler"] = {"class_path": "torch.optim.lr_scheduler.StepLR",
                                          "init_args": {"step_size": 1, "gamma": 0.7}}


def _trainer(epochs: int, **extra) -> dict:
    return {"max_epochs": epochs, "deterministic": True, **extra}


def _step_checkpoint(tmp: Path, every: int) -> list[dict]:
    return [{"class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
             "init_args": {"dirpath": str(tmp / "steps"), "every_n_train_steps": every, "save_top_k": -1,
                           "filename": "step{step}"}}]


def _fit_uninterrupted(model: dict, tmp: Path, epochs: int):
    cli = build(model, DATA, tmp / "full", trainer=_trainer(epochs), subcommand="fit")
    return cli


def _fit_killed_and_resumed(model: dict, tmp: Path, epochs: int, kill_at: int):
    first = build(model, DATA, tmp / "killed", trainer=_trainer(epochs, max_steps=kill_at,
                                                                 callbacks=_step_checkpoint(tmp, kill_at)),
                  subcommand="fit")
    assert first.trainer.global_step == kill_at
    (ckpt,) = (tmp / "steps").glob(f"*step={kill_at}.ckpt")
    del first
    second = build(model, DATA, tmp / "resumed", trainer=_trainer(epochs))  # a fresh process would do the same
    second.trainer.fit(second.model, datamodule=second.datamodule, ckpt_path=str(ckpt))
    return second


def _assert_same(a, b) -> None:
    assert a.trainer.global_step == b.trainer.global_step
    ma = {k: float(v) for k, v in a.trainer.callback_metrics.items() if k.startswith("val/")}
    mb = {k: float(v) for k, v in b.trainer.callback_metrics.items() if k.startswith("val/")}
    assert ma == mb and "val/f1" in ma
    wa, wb = a.model.state_dict(), b.model.state_dict()
    assert wa.keys() == wb.keys()
    for k in wa:
        assert torch.equal(wa[k], wb[k]), k
    oa, ob = a.trainer.optimizers[0].state_dict()["state"], b.trainer.optimizers[0].state_dict()["state"]
    for k in oa:
        for name in oa[k]:
            assert torch.equal(torch.as_tensor(oa[k][name]), torch.as_tensor(ob[k][name])), (k, name)
    assert a.trainer.optimizers[0].param_groups[0]["lr"] == b.trainer.optimizers[0].param_groups[0]["lr"]


def test_loader_skips_served_batches_of_the_interrupted_epoch():
    def loader():
        sampler = ShardSampler([3] * 20, 4, shuffle=True, bucket=False, pad=True, seed=7)
        return ResumableDataLoader(IndexedDataset(list(range(20))), batch_size=None, sampler=sampler,
                                   collate_fn=lambda items: [i for i, _ in items])

    full = loader()
    full.sampler.set_epoch(3)
    it = iter(full)
    seen = [next(it), next(it)]
    state = full.state_dict()
    assert state == {"epoch": 3, "batches": 2}
    rest = list(it)
    resumed = loader()
    resumed.load_state_dict(state)
    resumed.sampler.set_epoch(3)
    assert list(resumed) == rest and len(seen + rest) == 5
    assert len(list(resumed)) == 5  # the skip applies to one iteration only
    other = loader()
    other.load_state_dict({"epoch": 2, "batches": 2})  # a state from another epoch is ignored
    other.sampler.set_epoch(3)
    assert list(other) == seen + rest


@pytest.fixture(scope="module")
def scheduled_runs(tmp_path_factory):
    """The scheduled model's uninterrupted 2-epoch fit, and one fit killed at step 9 (mid epoch 1) with step
    checkpoints every 3 steps: its step-6 checkpoint is the one a fit killed at the epoch boundary leaves (the
    same steps, the same random stream; the checkpoint is written at the batch's end, before the kill). Both
    resume tests read them, instead of fitting the uninterrupted run and a killed run each."""
    tmp = tmp_path_factory.mktemp("resume")
    full = _fit_uninterrupted(SCHEDULED, tmp, epochs=2)
    kill_at = STEPS_PER_EPOCH + 3
    first = build(SCHEDULED, DATA, tmp / "killed", trainer=_trainer(2, max_steps=kill_at,
                                                                    callbacks=_step_checkpoint(tmp, 3)),
                  subcommand="fit")
    assert first.trainer.global_step == kill_at
    return full, tmp / "steps"


def _resumed_from(steps: Path, step: int, tmp: Path):
    (ckpt,) = steps.glob(f"*step={step}.ckpt")
    second = build(SCHEDULED, DATA, tmp / "resumed", trainer=_trainer(2))  # a fresh process would do the same
    second.trainer.fit(second.model, datamodule=second.datamodule, ckpt_path=str(ckpt))
    return second


def test_resume_mid_epoch_equals_uninterrupted(scheduled_runs, tmp_path):
    """Killed at step 9 (mid epoch 1 of 2), resumed: same val metrics, weights, Adam moments, learning rate."""
    full, steps = scheduled_runs
    _assert_same(full, _resumed_from(steps, STEPS_PER_EPOCH + 3, tmp_path))


def test_resume_at_epoch_boundary_equals_uninterrupted(scheduled_runs, tmp_path):
    """Killed at step 6, the last batch of epoch 0 (before its validation), resumed: the same."""
    full, steps = scheduled_runs
    _assert_same(full, _resumed_from(steps, STEPS_PER_EPOCH, tmp_path))


def test_resume_hcr_with_memory_mid_epoch(tmp_path):
    """HCR: the document-level memory buffers (written during training) survive the kill as well: slot writes
    are applied right after backward, so the step checkpoint (saved before the module's batch-end hook)
    holds the last step's writes."""
    from test_model_hcr import tiny_hcr

    model = tiny_hcr(memory_warmup_epochs=0)
    full = _fit_uninterrupted(model, tmp_path, epochs=2)
    resumed = _fit_killed_and_resumed(model, tmp_path, epochs=2, kill_at=STEPS_PER_EPOCH + 2)
    _assert_same(full, resumed)
    assert any("memory" in k for k in full.model.state_dict())


@pytest.mark.ddp
@pytest.mark.slow
def test_resume_under_ddp_equals_uninterrupted(tmp_path):
    """2 CPU processes (gloo): killed mid epoch 1 and resumed under DDP, the run ends with the weights and
    validation metrics of the uninterrupted DDP run (each rank's loader skips its own served batches)."""
    from test_distributed import retry_teardown_abort

    ddp = {"strategy": "ddp_spawn", "devices": 2}
    steps_per_epoch = 3  # 44 sentences, 2 ranks, batches of 8
    full = retry_teardown_abort(lambda i: build(SCHEDULED, DATA, tmp_path / f"full{i}",
                                                trainer=_trainer(2, **ddp), subcommand="fit"))
    kill_at = steps_per_epoch + 1

    def killed(i):
        steps = tmp_path / f"steps{i}"
        build(SCHEDULED, DATA, tmp_path / f"killed{i}", subcommand="fit",
              trainer=_trainer(2, max_steps=kill_at, callbacks=_step_checkpoint(steps, kill_at), **ddp))
        return next((steps / "steps").glob(f"*step={kill_at}.ckpt"))

    ckpt = retry_teardown_abort(killed)

    def resumed(i):
        cli = build(SCHEDULED, DATA, tmp_path / f"resumed{i}", trainer=_trainer(2, **ddp))
        cli.trainer.fit(cli.model, datamodule=cli.datamodule, ckpt_path=str(ckpt))
        return cli

    again = retry_teardown_abort(resumed)
    # ddp_spawn hands the workers' weights and callback metrics back to this process (not the loop counters)
    mf = {k: float(v) for k, v in full.trainer.callback_metrics.items() if k.startswith("val/")}
    ma = {k: float(v) for k, v in again.trainer.callback_metrics.items() if k.startswith("val/")}
    assert mf == ma and "val/f1" in mf
    wf, wa = full.model.state_dict(), again.model.state_dict()
    for k in wf:
        assert torch.equal(wf[k], wa[k]), k
