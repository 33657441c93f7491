"""The few shapes the compiled search is padded to (that padding changes no output:
`test_slots`)."""

from __future__ import annotations

import pytest

from t2t_keras.search.shapes import bucket_rows, bucket_width, bucket_widths


@pytest.mark.parametrize(
    ("length", "width"), [(1, 8), (8, 8), (9, 16), (64, 64), (65, 80), (129, 160), (250, 256)]
)
def test_bucket_widths(length: int, width: int) -> None:
    assert bucket_width(length, 256) == width


def test_one_row_is_at_least_32_wide_and_no_width_passes_max_length() -> None:
    assert [bucket_width(n, 256, rows=1) for n in (1, 20, 32, 33)] == [32, 32, 32, 40]
    assert bucket_width(10, 20, rows=1) == 20
    assert bucket_widths(100)[-1] == 100 and max(bucket_widths(256)) == 256


@pytest.mark.parametrize(
    ("rows", "padded"), [(1, 1), (3, 4), (8, 8), (9, 16), (32, 32), (33, 64), (100, 128)]
)
def test_bucket_rows(rows: int, padded: int) -> None:
    assert bucket_rows(rows) == padded
