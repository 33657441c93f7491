"""Lines of bytes that are not UTF-8, for the hostile-input tests: a strategy and two checks.

Importable from every test module: pyproject.toml puts tests/ on the path.
"""

from __future__ import annotations

from hypothesis import strategies as st

# A lone surrogate as a lenient encoder writes it (errors="surrogatepass"):
# "\ud800" becomes b"\xed\xa0\x80", which no UTF-8 decoder takes.
surrogate_bytes = st.text(st.characters(categories=["Cs"]), min_size=1, max_size=2).map(
    lambda text: text.encode("utf-8", "surrogatepass")
)


def line_bytes(*ordinary: bytes) -> st.SearchStrategy[bytes]:
    """One line of a file, without its break: random bytes, a surrogate's, or one of `ordinary`."""
    return st.one_of(
        st.binary(max_size=6).map(lambda raw: raw.replace(b"\n", b"")),
        surrogate_bytes,
        st.sampled_from([b"", *ordinary]),
    )


def is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def first_bad_line(lines: list[bytes]) -> int | None:
    """The number (from 1) of the first line that is not UTF-8, if any."""
    return next((number for number, line in enumerate(lines, start=1) if not is_utf8(line)), None)
