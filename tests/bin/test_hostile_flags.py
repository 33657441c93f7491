"""Random --hparams and --decode_hparams through the binaries: applied, or refused in one
paragraph with exit status 2, never a traceback."""

from __future__ import annotations

from pathlib import Path

from binaries import assert_user_error, run_in_process
from hypothesis import HealthCheck, example, given
from hypothesis import strategies as st
from hypothesis_profiles import ci_budget

from t2t_keras import registry
from t2t_keras.hparam import HParamsError
from t2t_keras.models import TransformerHParams
from t2t_keras.search.settings import DecodeHParams

FIELD_NAMES = sorted({*TransformerHParams().values(), *DecodeHParams().values()})
# What a command line can hold: anything but NUL.
flag_specs = st.lists(
    st.one_of(
        st.sampled_from(FIELD_NAMES),
        st.sampled_from([*"=,[]()'\" ", "\n", "\t", "\u2028", "-", "--hparams="]),
        st.sampled_from(["true", "None", "1e999", "0", "4", "0.3", "[1,2]", "9" * 5000]),
        st.text(st.characters(exclude_characters="\x00"), max_size=6),
    ),
    max_size=10,
).map("".join)
SETTINGS = ci_budget(30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def one_paragraph(error: HParamsError) -> str:
    """The error as the binaries print it: its whitespace runs made single spaces."""
    return " ".join(str(error).split())


@SETTINGS
@given(flag_specs)
@example("num_heads=2,d_model=32")
@example("d_model=" + "9" * 5000)
@example("\ud800")  # What Python makes of a byte of argv that is not UTF-8 (surrogateescape).
def test_trainer_hparams_are_shown_or_refused(spec: str) -> None:
    result = run_in_process(
        "t2t-trainer", "--hparams_help", "--hparams_set=transformer_tiny", f"--hparams={spec}"
    )
    try:
        expected = registry.hparams("transformer_tiny").override(spec)
    except HParamsError as error:
        assert_user_error(result, one_paragraph(error))
        return
    assert result.returncode == 0, result.stderr
    assert expected.describe() in result.stdout


@SETTINGS
@given(flag_specs)
@example("beam_size=2, alpha=0.5")
@example("batch_size=\n")
@example("num_samples=" + "9" * 5000)
@example("beam_size=\udcff")
def test_decoder_settings_are_parsed_or_refused(tmp_path: Path, spec: str) -> None:
    missing = tmp_path / "no_training_here"
    result = run_in_process("t2t-decoder", f"--output_dir={missing}", f"--decode_hparams={spec}")
    try:
        DecodeHParams().override(spec)
    except HParamsError as error:
        assert_user_error(result, one_paragraph(error))
        return
    # Parsed: the decoder went on, to the training directory that is not there.
    assert_user_error(result, f"{missing} does not exist")
