"""The t2t-* commands: help without TensorFlow, registry listing, bad input -> exit 2.

Flag and error cases run in-process (binaries.run_in_process); the real
programs run once each, in test_help_imports_no_tensorflow and
test_trainer_generate_data_is_datagen here, and in the decoder, exporter,
bleu and averaging tests.
"""

from __future__ import annotations

import gc
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from binaries import assert_user_error, run, run_in_process

BINARIES = ["t2t-datagen", "t2t-trainer", "t2t-decoder", "t2t-avg-checkpoints", "t2t-exporter"]
# TensorFlow's C++ start-up notices, which the programs hold back, and its INFO lines
# through absl (a checkpoint save's sharding time).
START_UP_NOISE = (
    "absl::InitializeLog",
    "oneDNN custom operations",
    "cuda drivers",
    "port.cc",
    "Sharding callback duration",
)

_HELP_WITHOUT_TENSORFLOW = """
import sys
sys.argv = [{binary!r}, *{arguments!r}]
from t2t_keras.bin import {module} as binary
try:
    binary.run()
except SystemExit as exit_request:
    code = exit_request.code
loaded = sorted(name for name in ("tensorflow", "keras", "tensorflow_text") if name in sys.modules)
print("loaded:", loaded, file=sys.stderr)
sys.exit(code if not loaded else 3)
"""


@pytest.mark.parametrize("binary", [*BINARIES, "t2t-bleu", "t2t-evalb", "t2t-benchmark"])
def test_help_imports_no_tensorflow(binary: str) -> None:
    module = binary.replace("-", "_")
    program = _HELP_WITHOUT_TENSORFLOW.format(binary=binary, module=module, arguments=["--help"])
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"{binary}: "), result.stdout[:200]
    assert result.stderr.strip() == "loaded: []", result.stderr


def test_bleu_scores_without_tensorflow(tmp_path: Path) -> None:
    (tmp_path / "hyp.txt").write_text("the cat sat on the mat\n", encoding="utf-8")
    arguments = [f"--translation={tmp_path / 'hyp.txt'}", f"--reference={tmp_path / 'hyp.txt'}"]
    program = _HELP_WITHOUT_TENSORFLOW.format(
        binary="t2t-bleu", module="t2t_bleu", arguments=arguments
    )
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("= 100.00") == 3, result.stdout
    assert result.stderr.strip() == "loaded: []", result.stderr


_IMPORT_AS_THE_BINARIES_DO = """
import sys
from t2t_keras.bin import tensorflow_logs
tensorflow_logs.import_tensorflow(verbose=False)
print(sorted(name for name in ("tensorflow", "keras", "matplotlib") if name in sys.modules))
from t2t_keras.metrics import attention_plots
print("plots import matplotlib:", "matplotlib.figure" in sys.modules)
"""


def test_tensorflow_loads_without_matplotlib_which_loads_when_plots_are_drawn() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _IMPORT_AS_THE_BINARIES_DO], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "['keras', 'tensorflow']",
        "plots import matplotlib: True",
    ], result.stdout


@pytest.mark.parametrize("binary", BINARIES)
def test_helpfull_lists_the_flags(binary: str) -> None:
    result = run_in_process(binary, "--helpfull")
    assert result.returncode == 0, result.stderr
    for flag in ("problem", "t2t_usr_dir", "registry_help"):  # Each flag's own entry.
        assert re.search(rf"\n +--(\[no\])?{flag}:", result.stdout), flag


def test_help_shows_purpose_and_own_flags() -> None:
    result = run_in_process("t2t-datagen", "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("t2t-datagen: writes a registered problem's vocabulary")
    for flag in ("--tmp_dir", "--data_dir", "--problem", "--t2t_usr_dir"):
        assert flag in result.stdout


def test_xla_is_one_flag_with_one_meaning() -> None:
    helps = {}
    for binary in ("t2t-trainer", "t2t-decoder", "t2t-exporter"):
        text = run_in_process(binary, "--helpfull").stdout
        pattern = r"\n  --xla: <off\|attention\|full>: (.*?\(default: '\w+'\))"
        (entry,) = re.findall(pattern, text, re.DOTALL)
        helps[binary] = entry
    assert helps["t2t-trainer"].endswith("(default: 'attention')")
    assert helps["t2t-decoder"].endswith("(default: 'full')")
    first = helps["t2t-trainer"].rsplit("(default", 1)[0]
    assert all(entry.rsplit("(default", 1)[0] == first for entry in helps.values())


def test_registry_help_lists_the_catalog() -> None:
    result = run_in_process("t2t-trainer", "--registry_help")
    assert result.returncode == 0, result.stderr
    assert "Hparams sets (" in result.stdout
    assert "transformer_base_table3_a1" in result.stdout


def test_a_program_run_where_tensorflow_is_loaded_freezes_none_of_its_callers_objects() -> None:
    # A process of its own freezes what importing TensorFlow made; a caller's objects,
    # frozen, would never be collected.
    frozen = gc.get_freeze_count()
    result = run_in_process("t2t-trainer", "--hparams_set=transformer_tiny", "--hparams_help")
    assert result.returncode == 0, result.stderr
    assert gc.get_freeze_count() <= frozen  # Some frozen objects may be freed meanwhile.


def test_hparams_help_shows_the_set_with_overrides() -> None:
    result = run_in_process(
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
        (
            "t2t-trainer",
            [*_TRAIN, "--xla=true"],
            ["--xla=true", "<off|attention|full>"],
        ),
        # tensor2tensor's flags that are named otherwise here say what replaces them.
        ("t2t-trainer", [*_TRAIN, "--worker_gpu=8"], ["'worker_gpu'", "takes --num_gpus"]),
        ("t2t-exporter", ["--as_text"], ["'as_text'", "SavedModels are written in binary"]),
        ("t2t-bleu", ["--bleu_variant=cased"], ["prints cased and uncased BLEU together"]),
        ("t2t-decoder", ["--noxla"], ["'noxla'", "an earlier t2t-decoder's", "use --xla=off"]),
    ],
)
def test_bad_input_exits_2_with_one_paragraph(
    binary: str, args: list[str], fragments: list[str]
) -> None:
    assert_user_error(run_in_process(binary, *args), *fragments)


def test_usr_dir_import_error_exits_2(make_package: Callable[..., Path]) -> None:
    package = make_package({"__init__.py": "raise RuntimeError('half-written problem')\n"})
    result = run_in_process("t2t-trainer", f"--t2t_usr_dir={package}", "--registry_help")
    assert_user_error(
        result, f"--t2t_usr_dir={package}", "RuntimeError: half-written problem", "line 1"
    )


def test_usr_dir_registrations_are_listed(make_package: Callable[..., Path]) -> None:
    package = make_package(
        {
            "__init__.py": """
            import dataclasses
            from t2t_keras import registry

            @registry.register_hparams
            def transformer_base_8k_warmup():
                '''Base with a longer warmup.'''
                return dataclasses.replace(registry.hparams("transformer_base"), warmup_steps=8000)
            """
        }
    )
    listing = run_in_process("t2t-trainer", f"--t2t_usr_dir={package}", "--registry_help")
    assert listing.returncode == 0, listing.stderr
    assert re.search(
        r"\n  transformer_base_8k_warmup +Base with a longer warmup\.\n", listing.stdout
    )
    shown = run_in_process(
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
        "--hparams=num_encoder_layers=1,num_decoder_layers=1",
        "--generate_data",
        f"--data_dir={data_dir}",
        f"--output_dir={tmp_path / 'train'}",
        "--train_steps=2",
        "--log_step_count_steps=1",
        "--eval_steps=1",
        "--eval_bleu_examples=4",
        "--xla=off",  # Compiling adds time, not coverage, here.
    )
    assert trainer.returncode == 0, trainer.stderr
    assert "wrote 20000 train examples to 2 shard(s)" in trainer.stdout, trainer.stderr
    assert re.search(r"step 2/2  loss [\d.]+  lr [\d.e-]+  grad_norm .* tokens/s", trainer.stderr)
    assert re.search(r"Trained 2 steps \(to step 2\) .* exact_match .*ckpt-2\.", trainer.stderr)
    run_file = json.loads((tmp_path / "train" / "run.json").read_text())
    assert run_file["vocab"] == {"inputs": "bytes", "targets": "bytes"}
    # In process: the real process's start-up is the trainer's, above.
    datagen = run_in_process(
        "t2t-datagen",
        "--problem=algorithmic_reverse_decimal",
        f"--data_dir={data_dir}",
        "--show_examples=3",
    )
    assert datagen.returncode == 0, datagen.stderr
    assert "nothing to do" in datagen.stdout
    shown = re.findall(r"^  (\d+)  ->  (\d+)$", datagen.stdout, flags=re.MULTILINE)
    assert len(shown) == 3 and all(target == source[::-1] for source, target in shown)
    for noise in START_UP_NOISE:
        assert noise not in trainer.stderr


def test_a_file_the_users_problem_cannot_read_exits_2(
    make_package: Callable[..., Path], tmp_path: Path
) -> None:
    package = make_package(
        {
            "__init__.py": """
            import os
            from t2t_keras import registry
            from t2t_keras.data import Text2TextProblem

            @registry.register_problem
            class MyFileCorpus(Text2TextProblem):
                def generate_samples(self, data_dir, tmp_dir, split):
                    with open(os.path.join(tmp_dir, split + ".tsv")) as lines:
                        yield from ({"inputs": line, "targets": line} for line in lines)
            """
        }
    )
    result = run_in_process(
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


def test_avg_checkpoints_takes_tensor2tensors_prefix(trained_dir: Path, tmp_path: Path) -> None:
    averaged = run_in_process(
        "t2t-avg-checkpoints",
        f"--prefix={trained_dir}/ckpt-",
        "--checkpoints=150,200",
        f"--averaged_dir={tmp_path / 'averaged'}",
        "--problem=translate_number_words_en_de",
    )
    assert averaged.returncode == 0, averaged.stderr
    assert f"  {trained_dir / 'ckpt-150'}\n  {trained_dir / 'ckpt-200'}\n" in averaged.stdout
    assert (tmp_path / "averaged" / "ckpt-200.index").exists()
    for args, fragments in [
        ([f"--prefix={tmp_path}/ckpt-"], [f"names checkpoints in {tmp_path}", "give one of them"]),
        (["--problem=algorithmic_copy_decimal"], ["not 'algorithmic_copy_decimal' (--problem)"]),
        (["--output_path=/tmp/averaged.ckpt"], ["'output_path'", "--averaged_dir"]),
    ]:
        result = run_in_process("t2t-avg-checkpoints", f"--output_dir={trained_dir}", *args)
        assert_user_error(result, *fragments)


@pytest.mark.parametrize(
    ("line", "level", "hidden"),
    [
        ("WARNING: All log messages before absl::InitializeLog() is called are written", 3, True),
        ("WARNING: All log messages before absl::InitializeLog() is called are written", 0, False),
        ("I0000 00:00:1795521086.820197    6947 port.cc:153] oneDNN custom operations", 1, True),
        ("I0000 00:00:1795521086.820197    6947 port.cc:153] oneDNN custom operations", 0, False),
        ("E0000 00:00:1795522139.080260   16066 cuda_platform.cc:52] failed call", 2, False),
        ("E0000 00:00:1795522139.080260   16066 cuda_platform.cc:52] failed call", 3, True),
        ("W1124 12:22:27.208704 140462105586560 text_problem.py:112] our own warning", 3, False),
        ("t2t-trainer: error: --problem is required", 3, False),
    ],
)
def test_tensorflow_start_up_lines_below_the_level_are_hidden(
    line: str, level: int, hidden: bool
) -> None:
    from t2t_keras.bin.tensorflow_logs import is_hidden

    assert is_hidden(line + "\n", level) is hidden
