"""Native bf16 detection (issue 46, item 2): the CPU's flags from ``/proc/cpuinfo``, bf16 native only with
``avx512_bf16`` or AMX (or a CUDA GPU of compute capability 8.0+) and not capped by ``ONEDNN_MAX_CPU_ISA``, and the
default precision picking bf16 only where it is native *and* the model's quality was measured equal (the
TransformerTagger). No timing."""

from __future__ import annotations

import pytest

from ner_zoo import hardware

AVX2_EPYC = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7B13
flags\t\t: fpu vme sse sse2 ssse3 sse4_1 sse4_2 avx avx2 fma f16c bmi2
"""
SAPPHIRE_RAPIDS = """processor\t: 0
model name\t: Intel(R) Xeon(R) Platinum 8481C
flags\t\t: fpu sse2 avx avx2 avx512f avx512bw avx512_bf16 amx_bf16 amx_tile amx_int8
"""
COOPER_LAKE = "model name\t: Intel Xeon 8380H\nflags\t\t: avx2 avx512f avx512_bf16\n"
SKYLAKE_SERVER = "model name\t: Intel Xeon 8175M\nflags\t\t: avx2 avx512f avx512bw\n"


@pytest.mark.parametrize("text, native", [(AVX2_EPYC, False), (SKYLAKE_SERVER, False), (COOPER_LAKE, True),
                                          (SAPPHIRE_RAPIDS, True), ("", False)])
def test_native_bf16_from_the_cpu_flags(text, native):
    flags = hardware.cpu_flags(text)
    assert ("avx2" in flags) == bool(text)
    assert hardware.native_bf16("cpu", flags, environ={}) is native
    assert hardware.cpu_native_bf16(flags, environ={}) is native


@pytest.mark.parametrize("environ, capped", [({}, False), ({"ONEDNN_MAX_CPU_ISA": "AVX2"}, True),
                                             ({"ONEDNN_MAX_CPU_ISA": "avx512_core"}, True),
                                             ({"DNNL_MAX_CPU_ISA": "AVX512_CORE_VNNI"}, True),
                                             ({"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16"}, False),
                                             ({"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_AMX"}, False),
                                             ({"ONEDNN_MAX_CPU_ISA": "ALL"}, False)])
def test_a_onednn_isa_cap_below_bf16_counts_as_emulated(environ, capped):
    """``make test-kernels`` caps oneDNN at AVX2: bf16 then runs emulated whatever the flags say."""
    amx = hardware.cpu_flags(SAPPHIRE_RAPIDS)
    assert hardware.onednn_capped(environ) is capped
    assert hardware.native_bf16("cpu", amx, environ) is not capped
    assert hardware.default_precision("TransformerTagger", "cpu", amx, environ) == ("32" if capped else "bf16")


def test_cpu_model_and_this_host_agree_with_its_flags():
    assert hardware.cpu_model(SAPPHIRE_RAPIDS) == "Intel(R) Xeon(R) Platinum 8481C"
    assert hardware.cpu_model(AVX2_EPYC) == "AMD EPYC 7B13"
    flags = hardware.cpu_flags()  # this host's
    assert hardware.native_bf16("cpu") is (bool(flags & hardware.BF16_FLAGS) and not hardware.onednn_capped())


def test_gpu_bf16_needs_compute_capability_8(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for capability, native in (((7, 5), False), ((8, 0), True), ((9, 0), True)):
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=0, c=capability: c)
        assert hardware.native_bf16("cuda:0") is native
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert hardware.native_bf16("cuda") is False


def test_auto_precision_is_bf16_only_where_native_and_measured_equal(monkeypatch):
    amx = hardware.cpu_flags(SAPPHIRE_RAPIDS)
    avx2 = hardware.cpu_flags(AVX2_EPYC)
    assert hardware.BF16_EQUAL_TRAINING == frozenset({"TransformerTagger"})  # measured on an AVX-512 BF16 host
    assert "TransformerTagger" in hardware.BF16_EQUAL_PREDICTION
    monkeypatch.setattr(hardware, "BF16_EQUAL_PREDICTION", frozenset())
    assert hardware.default_precision("TransformerTagger", "cpu", amx, {}) == "32"
    assert hardware.default_precision("TransformerTagger", "cpu", amx, {}, use="train") == "bf16"  # its own list
    monkeypatch.setattr(hardware, "BF16_EQUAL_PREDICTION", frozenset({"TransformerTagger"}))
    monkeypatch.setattr(hardware, "BF16_EQUAL_TRAINING", frozenset())
    assert hardware.default_precision("TransformerTagger", "cpu", amx, {}, use="train") == "32"
    assert hardware.default_precision("TransformerTagger", "cpu", amx, {}) == "bf16"
    with pytest.raises(ValueError, match="use must be one of predict, train"):
        hardware.default_precision("TransformerTagger", use="fit")
    assert hardware.default_precision("TransformerTaggerNet", "cpu", amx, {}) == "bf16"  # what ner_zoo.load holds
    assert hardware.default_precision("TransformerTagger", "cpu", avx2, {}) == "32"  # emulated: never by default
    assert hardware.default_precision("BiLSTMCRF", "cpu", amx, {}) == "32"


def test_the_reason_names_what_decided(monkeypatch):
    amx, avx2 = hardware.cpu_flags(SAPPHIRE_RAPIDS), hardware.cpu_flags(AVX2_EPYC)
    assert hardware.precision_reason("TransformerTaggerNet", "cpu", amx, {}).startswith(
        "bf16: this CPU computes bf16 natively and TransformerTagger's")
    assert hardware.precision_reason("TransformerTagger", "cpu", avx2, {}).startswith("fp32: this CPU has no native")
    assert "ONEDNN_MAX_CPU_ISA" in hardware.precision_reason("TransformerTagger", "cpu", amx,
                                                             {"ONEDNN_MAX_CPU_ISA": "AVX2"})
    assert "BiLSTMCRF's bf16 prediction quality was not measured" in hardware.precision_reason("BiLSTMCRF", "cpu", amx, {})
    assert "BF16_EQUAL_TRAINING" in hardware.precision_reason("BiLSTMCRF", "cpu", amx, {}, use="train")


def test_load_keeps_a_model_not_measured_in_bf16_at_fp32_on_any_host(trained, monkeypatch):
    import ner_zoo

    monkeypatch.setattr(hardware, "cpu_native_bf16", lambda flags=None, environ=None: True)  # as on a bf16 host
    assert ner_zoo.load(trained[1], device="cpu").precision == "32"  # a BiLSTM-CRF: not in BF16_EQUAL_PREDICTION
    assert ner_zoo.load(trained[1], device="cpu", precision="auto").precision == "32"
    assert ner_zoo.load(trained[1], device="cpu", precision="bf16").precision == "bf16"  # asked: taken
