"""The installed t2t-* commands: help, registry listing, bad input -> exit 2."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from binaries import assert_user_error, run

BINARIES = ["t2t-datagen", "t2t-trainer", "t2t-decoder", "t2t-avg-checkpoints", "t2t-exporter"]


@pytest.mark.parametrize("binary", BINARIES)
def test_helpfull_lists_the_flags(binary: str) -> None:
    result = run(binary, "--helpfull")
    assert result.returncode == 0, result.stderr
    for flag in ("--problem", "--t2t_usr_dir", "--registry_help"):
        assert flag in result.stdout


def test_help_shows_purpose_and_own_flags() -> None:
    result = run("t2t-datagen", "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("t2t-datagen: writes a registered problem's vocabulary")
    for flag in ("--tmp_dir", "--data_dir", "--problem", "--t2t_usr_dir"):
        assert flag in result.stdout


def test_registry_help_lists_the_catalog() -> None:
    result = run("t2t-trainer", "--registry_help")
    assert result.returncode == 0, result.stderr
    assert "Hparams sets (" in result.stdout
    assert "transformer_base_table3_a1" in result.stdout


def test_hparams_help_shows_the_set_with_overrides() -> None:
    result = run(
        "t2t-trainer", "--hparams_set=transformer_big", "--hparams=beam_size=8", "--hparams_help"
    )
    assert result.returncode == 0, result.stderr
    assert "  d_model = 1024 (int):" in result.stdout
    assert "  beam_size = 8 (int):" in result.stdout


_TRAIN = [
    "--problem=algorithmic_copy_decimal",
    "--hparams_set=transformer_tiny",
    "--data_dir=/tmp",
    "--output_dir=/tmp/t2t_out",
]


@pytest.mark.parametrize(
    ("binary", "args", "fragments"),
    [
        (
            "t2t-trainer",
            ["--problem=no_such_problem", "--hparams_set=transformer_base"],
            ["Unknown problem 'no_such_problem'"],
        ),
        ("t2t-datagen", ["--problem=no_such_problem"], ["Unknown problem 'no_such_problem'"]),
        (
            "t2t-trainer",
            ["--hparams_set=transformer_bse", "--hparams_help"],
            ["Did you mean: transformer_base"],
        ),
        (
            "t2t-trainer",
            [
                "--hparams_set=transformer_base",
                "--hparams=dropout=0.1,num_head=4",
                "--hparams_help",
            ],
            ["Unknown hparam 'num_head'", "num_heads"],
        ),
        (
            "t2t-trainer",
            ["--hparams_set=transformer_base", "--hparams=dropout=lots", "--hparams_help"],
            ["dropout=lots", "a finite number"],
        ),
        (
            "t2t-trainer",
            ["--hparams_set=transformer_base", "--hparams=dropout", "--hparams_help"],
            ["Malformed hparams override 'dropout'"],
        ),
        (
            "t2t-trainer",
            ["--t2t_usr_dir=/no/such/dir", "--registry_help"],
            ["--t2t_usr_dir=/no/such/dir: no such directory"],
        ),
        ("t2t-trainer", ["--hparams_set=transformer_base"], ["--problem is required"]),
        (
            "t2t-trainer",
            ["--hparams_sett=transformer_base"],
            ["Unknown command line flag 'hparams_sett'", "--helpfull"],
        ),
        ("t2t-decoder", ["transformer_base"], ["unexpected arguments 'transformer_base'"]),
        (
            "t2t-trainer",
            [*_TRAIN, "--profile_steps=a,b"],
            ["--profile_steps=a,b is not two step numbers", "FIRST,LAST"],
        ),
        ("t2t-trainer", [*_TRAIN, "--eval_steps=-1"], ["--eval_steps must be 0 or more"]),
        ("t2t-trainer", _TRAIN[:3], ["--output_dir is required"]),
        (
            "t2t-trainer",
            [*_TRAIN, "--distribution_strategy=multi_worker_mirrored"],
            ["multi_worker_mirrored needs the cluster in the TF_CONFIG environment variable"],
        ),
        (
            "t2t-trainer",
            [*_TRAIN[:3], "--output_dir=/tmp/t2t_out", "--data_dir=/no/such/data"],
            ["data_dir '/no/such/data' does not exist", "t2t-datagen --problem=algorithmic"],
        ),
    ],
)
def test_bad_input_exits_2_with_one_paragraph(
    binary: str, args: list[str], fragments: list[str]
) -> None:
    assert_user_error(run(binary, *args), *fragments)


def test_usr_dir_import_error_exits_2(tmp_path: Path) -> None:
    package = tmp_path / "broken_usr_dir"
    package.mkdir()
    (package / "__init__.py").write_text("raise RuntimeError('half-written problem')\n")
    result = run("t2t-trainer", f"--t2t_usr_dir={package}", "--registry_help")
    assert_user_error(
        result, f"--t2t_usr_dir={package}", "RuntimeError: half-written problem", "line 1"
    )


def test_usr_dir_registrations_are_listed(tmp_path: Path) -> None:
    package = tmp_path / "my_t2t_extras"
    package.mkdir()
    (package / "__init__.py").write_text(
        textwrap.dedent(
            """
            import dataclasses
            from t2t_keras import registry

            @registry.register_hparams
            def transformer_base_8k_warmup():
                '''Base with a longer warmup.'''
                return dataclasses.replace(registry.hparams("transformer_base"), warmup_steps=8000)
            """
        )
    )
    listing = run("t2t-trainer", f"--t2t_usr_dir={package}", "--registry_help")
    assert listing.returncode == 0, listing.stderr
    assert re.search(
        r"\n  transformer_base_8k_warmup +Base with a longer warmup\.\n", listing.stdout
    )
    shown = run(
        "t2t-trainer",
        f"--t2t_usr_dir={package}",
        "--hparams_set=transformer_base_8k_warmup",
        "--hparams_help",
    )
    assert "  warmup_steps = 8000 (int):" in shown.stdout


def test_trainer_generate_data_is_datagen(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    trainer = run(
        "t2t-trainer",
        "--problem=algorithmic_reverse_decimal",
        "--hparams_set=transformer_tiny",
        "--generate_data",
        f"--data_dir={data_dir}",
        f"--output_dir={tmp_path / 'train'}",
        "--train_steps=2",
        "--log_step_count_steps=1",
        "--eval_steps=1",
        "--eval_bleu_examples=4",
    )
    assert trainer.returncode == 0, trainer.stderr
    assert "wrote 20000 train examples to 2 shard(s)" in trainer.stdout, trainer.stderr
    assert re.search(r"step 2/2  loss [\d.]+  lr [\d.e-]+  grad_norm .* tokens/s", trainer.stderr)
    assert re.search(r"Trained 2 steps \(to step 2\) .* exact_match .*ckpt-2\.", trainer.stderr)
    run_file = json.loads((tmp_path / "train" / "run.json").read_text())
    assert run_file["vocab"] == {"inputs": "bytes", "targets": "bytes"}
    datagen = run(
        "t2t-datagen",
        "--problem=algorithmic_reverse_decimal",
        f"--data_dir={data_dir}",
        "--show_examples=3",
    )
    assert datagen.returncode == 0, datagen.stderr
    assert "nothing to do" in datagen.stdout
    shown = re.findall(r"^  (\d+)  ->  (\d+)$", datagen.stdout, flags=re.MULTILINE)
    assert len(shown) == 3 and all(target == source[::-1] for source, target in shown)


def test_a_file_the_users_problem_cannot_read_exits_2(tmp_path: Path) -> None:
    package = tmp_path / "my_file_corpus"
    package.mkdir()
    (package / "__init__.py").write_text(
        textwrap.dedent(
            """
            import os
            from t2t_keras import registry
            from t2t_keras.data import Text2TextProblem

            @registry.register_problem
            class MyFileCorpus(Text2TextProblem):
                def generate_samples(self, data_dir, tmp_dir, split):
                    with open(os.path.join(tmp_dir, split + ".tsv")) as lines:
                        yield from ({"inputs": line, "targets": line} for line in lines)
            """
        )
    )
    result = run(
        "t2t-datagen",
        f"--t2t_usr_dir={package}",
        "--problem=my_file_corpus",
        f"--data_dir={tmp_path / 'data'}",
        f"--tmp_dir={tmp_path / 'raw'}",
    )
    assert_user_error(
        result,
        "'my_file_corpus' could not read its train data: FileNotFoundError",
        "train.tsv",
        f"{package / '__init__.py'}, line 9",
    )
