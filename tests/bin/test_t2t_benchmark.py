"""t2t-benchmark: every mode on transformer_tiny, its JSON line, its FLOP counts."""

from __future__ import annotations

import json
import os

import pytest
import tensorflow as tf
from binaries import assert_user_error, run, run_in_process

from t2t_keras import machine
from t2t_keras.benchmark import flops
from t2t_keras.models import TransformerHParams
from t2t_keras.training import hardware

DECODE_SHAPE = ["--beam_size=2", "--decode_batch=3", "--src_length=6", "--fixed_output_length=8"]
TINY = ["--hparams_set=transformer_tiny", "--steps=1", "--warmup_steps=1", "--matmul_size=1024"]
COMMON_KEYS = {"mode", "steps", "step_time_s", "flops_per_s", "utilization", "peak_rss_mb"}
RATE_KEYS = {"tgt_tokens_per_s", "tokens_per_s", "sentences_per_s", "xla", "precision"}
MACHINE_KEYS = {"cpu", "cores", "cpu_flags", "onednn", "matmul_fp32_flops_per_s"}
TRAIN_SHAPE = ["--batch_sentences=8", "--src_length=9", "--tgt_length=7"]


def measurements(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def check_measurement(measurement: dict, mode: str, expected: dict) -> None:
    """One JSON line of `mode`: every key, the shapes `expected`, consistent rates."""
    assert set(measurement) >= COMMON_KEYS | RATE_KEYS | MACHINE_KEYS
    assert {key: measurement[key] for key in expected} == expected
    assert measurement["mode"] == mode
    assert 0.0 < measurement["utilization"] < 1.5
    assert measurement["step_time_s"] > 0 and measurement["peak_rss_mb"] > 100
    sentences = measurement.get("batch_sentences") or measurement["decode_batch"]
    assert measurement["sentences_per_s"] == pytest.approx(sentences / measurement["step_time_s"])


def test_train_prints_one_measurement() -> None:
    result = run_in_process(
        "t2t-benchmark", "--mode=train", *TINY, *TRAIN_SHAPE, "--mixed_precision=off"
    )
    assert result.returncode == 0, result.stderr
    (measurement,) = measurements(result.stdout)
    expected = {"hparams_set": "transformer_tiny", "batch_sentences": 8, "src_length": 9}
    check_measurement(measurement, "train", expected)
    assert measurement["precision"] == "fp32"


def test_a_target_vocabulary_of_its_own_size_trains() -> None:
    # Random target ids stay below target_vocab_size, or the embedding lookup fails.
    own = "--hparams=shared_embeddings=false,target_vocab_size=5"
    shape = ["--batch_sentences=4", "--src_length=6", "--tgt_length=5"]
    result = run_in_process("t2t-benchmark", "--mode=train", *TINY, *shape, own)
    assert result.returncode == 0, result.stderr
    (measurement,) = measurements(result.stdout)
    assert measurement["mode"] == "train" and measurement["batch_sentences"] == 4


def fake_cpu(monkeypatch: pytest.MonkeyPatch, flags: set[str], onednn_on: bool) -> None:
    """A CPU of these flags, whose bfloat16 products run twice the float32 rate."""
    cpu = machine.Cpu("Faked CPU", frozenset(flags), "x86_64", "Linux")
    monkeypatch.setattr(machine, "read_cpu", lambda *_: cpu)
    monkeypatch.setattr(hardware, "onednn_enabled", lambda: onednn_on)
    monkeypatch.setattr(hardware, "matmul_rate", lambda dtype: {tf.bfloat16: 2e11}.get(dtype, 1e11))


def test_auto_trains_in_bfloat16_where_the_faked_cpu_runs_it_natively_and_faster(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The binary takes auto's choice; the choice on every kind of CPU is
    tests/training/test_hardware.py's, and float32's on a CPU without bfloat16
    the decoding test's below."""
    flags = {"avx2", "fma", "avx512f", "avx512_bf16"}
    fake_cpu(monkeypatch, flags, onednn_on=True)
    result = run_in_process("t2t-benchmark", "--mode=train", *TINY, *TRAIN_SHAPE)
    assert result.returncode == 0, result.stderr
    (measurement,) = measurements(result.stdout)
    assert measurement["precision"] == "bf16" and measurement["cpu"] == "Faked CPU"
    assert measurement["cpu_flags"]["avx512_bf16"] is True


@pytest.mark.parametrize(
    ("flags", "expected"),
    [({"avx2", "fma", "avx512f", "avx512_bf16"}, ["fp32", "bf16"]), ({"avx2", "fma"}, ["fp32"])],
)
def test_auto_decodes_in_float32_and_in_bfloat16_where_the_faked_cpu_runs_it(
    monkeypatch: pytest.MonkeyPatch, flags: set[str], expected: list[str]
) -> None:
    fake_cpu(monkeypatch, flags, onednn_on=True)
    result = run_in_process("t2t-benchmark", "--mode=decode", *TINY, *DECODE_SHAPE)
    assert result.returncode == 0, result.stderr
    lines = measurements(result.stdout)
    assert [line["precision"] for line in lines] == expected
    shape = {"beam_size": 2, "decode_batch": 3, "fixed_output_length": 8}
    for line in lines:
        check_measurement(line, "decode", shape)


def test_matmul_prints_fp32_and_bf16_rates_and_the_machine_as_a_real_program() -> None:
    # The user's TF_ENABLE_ONEDNN_OPTS wins over TensorFlow's default and ours.
    env = {**os.environ, "TF_ENABLE_ONEDNN_OPTS": "0"}
    result = run("t2t-benchmark", "--mode=matmul", "--steps=2", "--matmul_size=256", env=env)
    assert result.returncode == 0, result.stderr
    assert "oneDNN kernels: TF_ENABLE_ONEDNN_OPTS=0 is set, so it is kept" in result.stderr
    fp32, bf16 = measurements(result.stdout)
    assert (fp32["precision"], bf16["precision"]) == ("fp32", "bf16")
    cpu = machine.read_cpu()
    for measurement in (fp32, bf16):
        assert set(measurement) >= COMMON_KEYS | MACHINE_KEYS and measurement["matmul_size"] == 256
        assert measurement["flops_per_s"] == pytest.approx(2 * 256**3 / measurement["step_time_s"])
        assert 0.0 < measurement["utilization"] < 1.5
        assert measurement["onednn"] is False
        assert (
            measurement["cpu"] == (cpu.model or "unknown")
            and measurement["cpu_flags"] == cpu.isa_flags
        )
        assert measurement["matmul_fp32_flops_per_s"] == fp32["flops_per_s"]


def test_training_mirrored_over_a_split_cpu_as_a_real_program() -> None:
    # The CPU is split before the start-up matmul rate starts TensorFlow's runtime.
    split = ["--cpu_devices=2", "--distribution_strategy=mirrored", "--mixed_precision=off"]
    # One layer each side and no XLA: what is tested is the order of start-up (half the time).
    smaller = ["--hparams=num_encoder_layers=1,num_decoder_layers=1", "--xla=off"]
    result = run("t2t-benchmark", "--mode=train", *TINY, *TRAIN_SHAPE, *split, *smaller)
    assert result.returncode == 0, result.stderr[-3000:]
    (measurement,) = measurements(result.stdout)
    assert measurement["replicas"] == 2 and measurement["batch_sentences"] == 8


def test_an_output_shorter_than_the_source_is_refused() -> None:
    result = run_in_process(
        "t2t-benchmark", "--mode=decode", *TINY, "--src_length=30", "--fixed_output_length=10"
    )
    assert_user_error(result, "--fixed_output_length=10 is below --src_length=30")


# One encoder and one decoder layer, d_model 4, d_ff 8, 2 heads of depth 2, 10 words.
SMALL = TransformerHParams().override(
    "vocab_size=10,num_encoder_layers=1,num_decoder_layers=1,d_model=4,d_ff=8,"
    "num_heads=2,d_k=2,d_v=2"
)


def test_flop_counts_by_hand() -> None:
    # Per token: W^Q+W^O 32, W^K+W^V 32, feed-forward 64, scores and sum 8 per key.
    # Encoder, 3 tokens: 3 * (32 + 32 + 24 + 64) = 456. Decoder, 2 tokens:
    # 2 * (64 + 32 + 16 + 24 + 64) = 400, encoder-decoder keys/values 96;
    # softmax projection 2 * 40 = 80. Multiply-adds 1032, FLOPs 2064.
    assert flops.forward_flops(SMALL, 1, 3, 2) == 2064
    assert flops.forward_flops(SMALL, 5, 3, 2) == 5 * 2064
    assert flops.train_flops(SMALL, 1, 3, 2) == 3 * 2064
    # Decoding 2 tokens with 2 beams: encoder and keys/values 456 + 96 once; per beam,
    # position 1: 64 + 32 + 8 + 24 + 64 + 40 = 232, position 2: 240. 552 + 2 * 472 = 1496.
    assert flops.decode_flops(SMALL, 1, 3, 2, 2) == 2 * 1496
    # A target vocabulary of 3 words: the projection is 12 multiply-adds a token, not 40.
    own_targets = SMALL.override("shared_embeddings=false,target_vocab_size=3")
    assert flops.forward_flops(own_targets, 1, 3, 2) == 2 * (1032 - 2 * 28)
    assert flops.decode_flops(own_targets, 1, 3, 2, 2) == 2 * (1496 - 2 * 2 * 28)


def test_training_memory_stays_flat_from_step_10_to_50() -> None:
    from t2t_keras.benchmark import measure
    from t2t_keras.hparams.transformer import transformer_tiny
    from t2t_keras.training import make_strategy
    from t2t_keras.training.config import TrainConfig

    hparams = transformer_tiny().override("vocab_size=100")
    strategy = make_strategy("one_device")
    result = measure.train(hparams, strategy, TrainConfig(), 8, 9, 7, 48, 2, matmul_rate=1e9)
    rss = result["rss_mb_by_step"]
    assert list(rss) == ["10", "20", "30", "40", "50"]
    assert rss["50"] <= 1.05 * rss["10"], rss
