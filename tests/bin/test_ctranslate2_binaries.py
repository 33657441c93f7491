"""t2t-exporter --export_format=ctranslate2 and t2t-decoder --runtime=ctranslate2, in-process."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from binaries import assert_user_error, run_in_process

from t2t_keras.problems.number_words import english, german

NUMBERS = [42, 7, 312_005, 999, 18, 61_000, 5, 230, 12, 800_001]


@pytest.fixture(scope="module")
def export_dir(trained_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("export") / "ct2"
    result = run_in_process(
        "t2t-exporter",
        f"--output_dir={trained_dir}",
        "--export_format=ctranslate2",
        f"--export_dir={target}",
        "--decode_hparams=beam_size=2",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == str(target)
    return target


def test_exported_model_decodes_files_keeping_lines_and_scores(
    export_dir: Path, trained_dir: Path, tmp_path: Path
) -> None:
    sources = [english(n) for n in NUMBERS]
    references = [german(n) for n in NUMBERS]
    sources[2:2], references[2:2] = ["", " ".join(["one"] * 500)], ["", "x"]
    (tmp_path / "in.en").write_text("\n".join(sources) + "\n", encoding="utf-8")
    (tmp_path / "ref.de").write_text("\n".join(references) + "\n", encoding="utf-8")
    info = json.loads((export_dir / "t2t_keras.json").read_text())
    assert info["search_defaults"]["beam_size"] == 2
    assert info["run"]["problem"] == "translate_number_words_en_de"
    assert (export_dir / info["run"]["vocab"]["inputs"]).is_file()
    # The training directory is not needed; with it, the export is checked against it.
    for extra in ([], [f"--output_dir={trained_dir}"]):
        result = run_in_process(
            "t2t-decoder",
            "--runtime=ctranslate2",
            f"--ctranslate2_dir={export_dir}",
            "--ctranslate2_threads=1",
            f"--decode_from_file={tmp_path / 'in.en'}",
            f"--decode_to_file={tmp_path / 'out.de'}",
            f"--decode_reference={tmp_path / 'ref.de'}",
            *extra,
        )
        assert result.returncode == 0, result.stderr
        outputs = (tmp_path / "out.de").read_text(encoding="utf-8").split("\n")[:-1]
        assert len(outputs) == len(sources)
        assert outputs[2] == "" and outputs[3]
        assert "exact match" in result.stdout
        assert sum(o == r for o, r in zip(outputs, references, strict=True)) >= 5


def test_a_split_decodes_from_the_export_alone(export_dir: Path) -> None:
    result = run_in_process(
        "t2t-decoder",
        "--runtime=ctranslate2",
        f"--ctranslate2_dir={export_dir}",
        "--decode_hparams=num_samples=20,beam_size=1",
    )
    assert result.returncode == 0, result.stderr
    assert "translate_number_words_en_de test, 20 sentences:" in result.stdout


def test_an_export_of_another_model_is_refused(
    export_dir: Path, pre_norm_trained_dir: Path
) -> None:
    result = run_in_process(
        "t2t-decoder",
        "--runtime=ctranslate2",
        f"--output_dir={pre_norm_trained_dir}",
        f"--ctranslate2_dir={export_dir}",
        "--decode_interactive",
    )
    assert_user_error(result, "exported from another model", "problem, hparams, vocabularies")


def test_a_directory_that_is_not_an_export_is_refused(tmp_path: Path) -> None:
    (tmp_path / "model.bin").write_bytes(b"converted by some other tool")
    result = run_in_process("t2t-decoder", "--runtime=ctranslate2", f"--ctranslate2_dir={tmp_path}")
    assert_user_error(result, "not a t2t_keras CTranslate2 export")


def test_an_unknown_quantization_is_refused(trained_dir: Path, tmp_path: Path) -> None:
    result = run_in_process(
        "t2t-exporter",
        f"--output_dir={trained_dir}",
        "--export_format=ctranslate2",
        "--quantization=int4",
        f"--export_dir={tmp_path / 'ct2'}",
    )
    assert_user_error(result, "unknown --quantization 'int4'", "int8", "float32")
    assert not (tmp_path / "ct2").exists()


def test_without_the_ctranslate2_package_both_say_how_to_install_it(
    trained_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ctranslate2", None)  # `import ctranslate2` fails.
    export = run_in_process(
        "t2t-exporter",
        f"--output_dir={trained_dir}",
        "--export_format=ctranslate2",
        f"--export_dir={tmp_path / 'ct2'}",
    )
    assert_user_error(export, "need the ctranslate2 package", "t2t_keras[ctranslate2]")
    decode = run_in_process("t2t-decoder", "--runtime=ctranslate2", f"--output_dir={trained_dir}")
    assert_user_error(decode, "need the ctranslate2 package", "t2t_keras[ctranslate2]")


def test_flags_of_the_other_runtime_or_format_are_refused(trained_dir: Path) -> None:
    decode = run_in_process("t2t-decoder", f"--output_dir={trained_dir}", "--ctranslate2_threads=2")
    assert_user_error(decode, "--ctranslate2_threads applies to --runtime=ctranslate2")
    export = run_in_process("t2t-exporter", f"--output_dir={trained_dir}", "--quantization=int8")
    assert_user_error(export, "--quantization applies to --export_format=ctranslate2")
    sampling = run_in_process(
        "t2t-exporter",
        f"--output_dir={trained_dir}",
        "--export_format=ctranslate2",
        "--decode_hparams=sampling=true,top_k=5",
    )
    assert_user_error(sampling, "sets sampling=true", "t2t-decoder --runtime=ctranslate2")
