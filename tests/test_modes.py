"""--xla's modes: one list of values, one meaning in every binary and the library."""

from __future__ import annotations

import pytest

from t2t_keras.errors import UserError
from t2t_keras.modes import XLA_MODES, Xla


@pytest.mark.parametrize(
    ("mode", "attention", "search", "step"),
    [("off", False, False, False), ("attention", True, False, False), ("full", True, True, True)],
)
def test_what_each_mode_compiles(mode: str, attention: bool, search: bool, step: bool) -> None:
    xla = Xla(mode)
    assert (xla.compiles_attention, xla.compiles_whole_search, xla.compiles_whole_step) == (
        attention,
        search,
        step,
    )


def test_an_unknown_mode_is_refused_naming_the_accepted_ones() -> None:
    with pytest.raises(UserError, match="--xla=jit is not an XLA mode; accepted: off, attention"):
        Xla("jit")
    assert XLA_MODES == ("off", "attention", "full")
