"""Which Trainer precisions a model can train in; a precision it cannot is refused with one line.

Mixed precisions (``bf16-mixed``, ``16-mixed``) and ``32-true``/``64-true`` run every model: LSTMs and CRFs
compute in fp32 under autocast (:mod:`ner_zoo.modules.precision`). Pure half precisions (``bf16-true``,
``16-true``) store the weights in half, which those fp32 pieces cannot take (CPU oneDNN's LSTM fails with
"could not create a primitive descriptor"; a CRF's log-sum-exp over a sentence loses too much in half), so
a model holding an LSTM, GRU or CRF refuses them. A model may refuse more precisions in its class attribute
``REFUSED_PRECISIONS`` (precision -> reason).
"""

from __future__ import annotations

import torch

from ner_zoo.checkpoints.migrations import paper

HALF_WEIGHTS = {"16-true", "bf16-true", "16", "bf16", "half", "bfloat16"}



def precision_refusal(model: torch.nn.Module, precision: str | int | None) -> str | None:
    """The one-line reason ``model`` cannot train in ``precision``, or None."""
    precision = str(precision)
    net = getattr(model, "net", model)  # a task module: the network it hosts says
    name = paper(type(net).__name__)
    own = dict(getattr(net, "REFUSED_PRECISIONS", {}) or {})
    if precision in own:
        return f"{name} cannot train in precision {precision}: {own[precision]}"
    if precision in HALF_WEIGHTS:
        fragile = sorted({type(m).__name__ for m in net.modules()
                          if m is not net and (isinstance(m, (torch.nn.LSTM, torch.nn.GRU)) or "CRF" in type(m).__name__)})
        if fragile:
            return (f"{name} cannot train in precision {precision}: its {', '.join(fragile)} compute in fp32 and "
                    "need fp32 weights; use bf16-mixed, 16-mixed or 32-true")
    return None
