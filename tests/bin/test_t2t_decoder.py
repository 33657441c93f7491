"""t2t-decoder end to end: a trained tiny model decodes files, a split and stdin.

The first test runs the installed program, its XLA code optimized as users'
processes compile it (the tests' is not: conftest.py), and checks that the
tests' decodes the same; the others call it in-process.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import sacrebleu
from binaries import assert_user_error, run, run_in_process, script
from xla_optimization import optimized

from t2t_keras.benchmark.latency import typed_line_latencies
from t2t_keras.problems.number_words import english, german

NUMBERS = [42, 7, 312_005, 999, 18, 61_000, 5, 230, 12, 800_001]


def test_file_decoding_keeps_lines_and_scores_like_sacrebleu(
    trained_dir: Path, tmp_path: Path
) -> None:
    sources = [english(n) for n in NUMBERS]
    references = [german(n) for n in NUMBERS]
    # An empty line, a line of 500 words (over max_length), non-ASCII text.
    sources[2:2], references[2:2] = ["", " ".join(["one"] * 500), "fünf élan 中文"], ["", "x", "y"]
    (tmp_path / "in.en").write_text("\n".join(sources) + "\n", encoding="utf-8")
    (tmp_path / "ref.de").write_text("\n".join(references) + "\n", encoding="utf-8")
    result = run(
        "t2t-decoder",
        f"--output_dir={trained_dir}",
        f"--decode_from_file={tmp_path / 'in.en'}",
        f"--decode_to_file={tmp_path / 'out.de'}",
        f"--decode_reference={tmp_path / 'ref.de'}",
        f"--attention_plot_dir={tmp_path / 'plots'}",
        "--attention_plot_sentences=2",
        "--decode_hparams=batch_size=4",
        env=optimized(tmp_path / "xla"),  # As users' processes compile: see conftest.py.
    )
    assert result.returncode == 0, result.stderr
    outputs = (tmp_path / "out.de").read_text(encoding="utf-8").split("\n")
    unoptimized = run_in_process(
        "t2t-decoder",
        f"--output_dir={trained_dir}",
        f"--decode_from_file={tmp_path / 'in.en'}",
        f"--decode_to_file={tmp_path / 'unoptimized.de'}",
        "--decode_hparams=batch_size=4",
    )
    assert unoptimized.returncode == 0, unoptimized.stderr
    assert (tmp_path / "unoptimized.de").read_text(encoding="utf-8").split("\n") == outputs
    assert any((tmp_path / "xla").iterdir())  # It compiled its own, not the run's kept ones.
    assert outputs[-1] == "" and len(outputs) - 1 == len(sources)
    outputs.pop()
    assert outputs[2] == ""
    assert all(outputs[3:5])
    assert "1 input(s) longer than max_length=" in result.stderr
    assert "sentences/s" in result.stderr
    right = [out == ref for out, ref in zip(outputs, references, strict=True) if ref not in "xy"]
    assert sum(right) >= len(right) // 2, outputs
    bleu = sacrebleu.BLEU()
    expected = bleu.corpus_score(outputs, [references])
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("BLEU")]
    # Score, n-gram precisions, brevity penalty and both lengths, then the signature.
    details = expected.format().split(" ", 3)[3]
    signature = bleu.get_signature().format()
    assert line.endswith(f"= {expected.score:.2f}  {details}  {signature}"), line
    match = sum(out == ref for out, ref in zip(outputs, references, strict=True))
    assert f"exact match: {100 * match / len(outputs):.2f}%" in result.stdout
    assert len(list((tmp_path / "plots").rglob("*.png"))) > 0
    assert (tmp_path / "plots" / "index.html").exists()
    for noise in ("absl::InitializeLog", "oneDNN custom operations", "cuda drivers"):
        assert noise not in result.stderr


def test_decodes_the_problems_test_split_and_prints_its_score(trained_dir: Path) -> None:
    result = run_in_process(
        "t2t-decoder",
        f"--checkpoint_path={trained_dir / 'ckpt-200'}",
        "--decode_hparams=num_samples=40",
    )
    assert result.returncode == 0, result.stderr
    assert "translate_number_words_en_de test, 40 sentences:" in result.stdout
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("exact match")]
    assert float(line.split()[2].rstrip("%")) >= 50.0, line


def test_interactive_translates_each_line_with_beams_and_scores(trained_dir: Path) -> None:
    result = run_in_process(
        "t2t-decoder",
        f"--output_dir={trained_dir}",
        "--decode_interactive",
        "--decode_hparams=beam_size=2,return_beams=true,write_beam_scores=true",
        stdin=b"forty\n\nsix \xff hundred\nsix hundred\n",
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    assert lines.pop() == "" and len(lines) == 4  # One output line per input line, nothing else.
    first = lines[0].split("\t")
    assert len(first) == 4 and float(first[2]) >= float(first[3])
    assert lines[1] == lines[2] == "\t\t-inf\t-inf"
    assert "Input line 3 is not UTF-8" in result.stderr
    assert lines[3].split("\t")[0]


def test_interactive_answers_every_line_after_the_first_within_half_a_second(
    trained_dir: Path, tmp_path: Path
) -> None:
    """From Enter to the output line, through a pipe, with no compilation kept from before:
    only the first line waits for the search to compile, whatever the later lines' lengths."""
    lines = [english(n) for n in (42, 7, 312_005, 800_001, 61_000, 18)]  # 1 to 8 words.
    argv = [str(script("t2t-decoder")), f"--output_dir={trained_dir}", "--decode_interactive"]
    env = {**optimized(), "XDG_CACHE_HOME": str(tmp_path / "cache")}  # Users' latency.
    with (tmp_path / "stderr").open("w") as errors:
        seconds = typed_line_latencies(argv, lines, env, errors)
    assert max(seconds[1:]) < 0.5, seconds
    assert list((tmp_path / "cache" / "t2t_keras" / "xla").iterdir())  # Kept for the next run.


def test_bad_input_is_refused_before_anything_is_written(trained_dir: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.en"
    bad.write_bytes(b"forty\nfifty \xff\xfe\n")
    out = tmp_path / "out.de"
    out.write_text("kept\n")
    args = [f"--output_dir={trained_dir}", f"--decode_from_file={bad}", f"--decode_to_file={out}"]
    assert_user_error(run_in_process("t2t-decoder", *args), f"{bad}, line 2: invalid UTF-8")
    assert out.read_text() == "kept\n"
    good = tmp_path / "good.en"
    good.write_text("forty\n")
    unwritable = [f"--output_dir={trained_dir}", f"--decode_from_file={good}"]
    assert_user_error(
        run_in_process(
            "t2t-decoder", *unwritable, f"--decode_to_file={tmp_path / 'no' / 'out.de'}"
        ),
        "does not exist",
    )
    assert_user_error(
        run_in_process("t2t-decoder", *unwritable, f"--decode_to_file={tmp_path}"), "is a directory"
    )
    same = run_in_process("t2t-decoder", *unwritable, f"--decode_to_file={good}")
    assert_user_error(same, "is the --decode_from_file file")
    assert good.read_text() == "forty\n"


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--checkpoint_path={dir}/ckpt-7"], ["ckpt-7 does not exist", "TRAIN/ckpt-1000"]),
        (
            ["--output_dir={dir}", "--hparams_set=transformer_big"],
            ["'transformer_tiny'", "'transformer_big'"],
        ),
        (["--output_dir={dir}", "--problem=algorithmic_copy_decimal"], ["not 'algorithmic"]),
        (["--output_dir={dir}", "--decode_hparams=beam=3"], ["Unknown hparam 'beam'"]),
        (
            ["--output_dir={dir}", "--decode_hparams=sampling=true,temperature=0"],
            ["hparam temperature=0.0 is not valid", "must be a number more than 0"],
        ),
        ([], ["no model to load", "--output_dir"]),
        (
            ["--output_dir={dir}", "--decode_interactive", "--attention_plot_dir=/tmp/plots"],
            ["drop --decode_to_file and --attention_plot_dir"],
        ),
        (["--output_dir={dir}", "--decode_reference=ref.de"], ["give that file too"]),
        # tensor2tensor's flags describing the model are checked against the training.
        (["--output_dir={dir}", "--model=transformer_v2"], ["model 'transformer'", "--model"]),
        (
            ["--output_dir={dir}", "--hparams=num_encoder_layers=3"],
            ["--hparams=num_encoder_layers=3 differs", "num_encoder_layers=2", "--decode_hparams"],
        ),
        (["--output_dir={dir}", "--hparams=num_head=4"], ["Unknown hparam 'num_head'"]),
        (["--output_dir={dir}", "--data_dir=/no/such/data"], ["/no/such/data is not a directory"]),
        (["--output_dir={dir}", "--data_dir={dir}/eval"], ["is missing, unlike the one"]),
        (["--output_dir={dir}", "--keep_timestamp"], ["--keep_timestamp dates the output"]),
    ],
)
def test_bad_model_flags_exit_2(trained_dir: Path, args: list[str], fragments: list[str]) -> None:
    assert_user_error(
        run_in_process("t2t-decoder", *[arg.format(dir=trained_dir) for arg in args]), *fragments
    )


def test_checkpoint_of_another_hparams_set_is_refused(trained_dir: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    shutil.copytree(trained_dir, other)
    run_json = json.loads((other / "run.json").read_text())
    (other / "run.json").write_text(json.dumps({**run_json, "hparams_set": "transformer_small"}))
    result = run_in_process(
        "t2t-decoder", f"--output_dir={trained_dir}", f"--checkpoint_path={other / 'ckpt-200'}"
    )
    assert_user_error(result, "'transformer_small'", "'transformer_tiny'")


def test_tensor2tensor_flags_that_agree_are_accepted(
    trained_dir: Path, number_words_data: Path, tmp_path: Path
) -> None:
    hparams = json.loads((trained_dir / "hparams.json").read_text())
    sources = tmp_path / "in.en"
    sources.write_text("forty two\nseven\n", encoding="utf-8")
    result = run_in_process(
        "t2t-decoder",
        f"--data_dir={number_words_data}",
        "--problem=translate_number_words_en_de",
        "--model=transformer",
        "--hparams_set=transformer_tiny",
        f"--hparams=num_heads={hparams['num_heads']}",
        f"--output_dir={trained_dir}",
        f"--decode_from_file={sources}",
        f"--decode_to_file={tmp_path / 'out.de'}",
        "--keep_timestamp",
        "--xla=off",
    )
    assert result.returncode == 0, result.stderr
    assert len((tmp_path / "out.de").read_text(encoding="utf-8").splitlines()) == 2
    checkpoint_time = os.path.getmtime(trained_dir / "ckpt-200.index")
    assert os.path.getmtime(tmp_path / "out.de") == checkpoint_time


def test_sampling_with_a_seed_draws_the_same_file_twice_and_another_seed_others(
    trained_dir: Path, tmp_path: Path
) -> None:
    source = tmp_path / "in.en"
    source.write_text("".join(f"{english(n)}\n" for n in NUMBERS), encoding="utf-8")
    outputs = []
    for run_number, seed in enumerate((1, 1, 2)):
        out = tmp_path / f"out{run_number}.de"
        result = run_in_process(
            "t2t-decoder",
            f"--output_dir={trained_dir}",
            f"--decode_from_file={source}",
            f"--decode_to_file={out}",
            f"--decode_hparams=sampling=true,temperature=1.5,samples_per_input=2,seed={seed}",
            "--xla=off",
        )
        assert result.returncode == 0, result.stderr[-3000:]
        lines = out.read_text(encoding="utf-8").splitlines()
        assert len(lines) == len(NUMBERS) and all(len(line.split("\t")) == 2 for line in lines)
        outputs.append(lines)
    assert outputs[0] == outputs[1]
    assert outputs[0] != outputs[2]
