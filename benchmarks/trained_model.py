"""A trained model as the decoding benchmarks use it: its translator, built as t2t-decoder
builds it, its exports, the raw file it decodes and XLA's compilation cache.

TensorFlow loads when a translator is built, not on import: `decode_files.py`
times the start-up of a process that imports this.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from t2t_commands import run, t2t

MULTI30K = Path(__file__).resolve().parents[2] / "shared" / "data" / "multi30k"
# The raw file the decoding benchmarks decode by default, and its references.
TEST_SOURCE, TEST_REFERENCE = (str(MULTI30K / f"test_2016_flickr.{side}") for side in ("en", "de"))
# What `export` makes: the runtimes' names, as decode_files.py names them.
EXPORTS = ("saved_model", "ctranslate2 float32", "ctranslate2 int8")


def source_lines(path: str, limit: int = 0) -> list[str]:
    """The lines of a raw text file; its first `limit` lines if given."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return lines[:limit] if limit else lines


def load_translator(run_dir: str, *decode_hparams: str) -> Any:
    """The Translator of `run_dir` (a training directory or its averaged/) as t2t-decoder
    builds it (--xla=full; a parser's search held to trees): each of `decode_hparams`
    overrides the ones before."""
    from t2t_keras import catalog
    from t2t_keras.bin.trained_model import tree_tokens
    from t2t_keras.modes import Xla
    from t2t_keras.run.loading import load_trained
    from t2t_keras.search.settings import DecodeHParams
    from t2t_keras.serving.translator import Translator

    catalog.load()
    mode = Xla("full")
    trained = load_trained(run_dir, use_xla=mode.compiles_attention)
    settings = DecodeHParams()
    for overrides in decode_hparams:
        settings = settings.override(overrides)
    return Translator(trained.model, trained.vocabs, settings.resolve(trained.hparams),
                      mode.compiles_whole_search, tree_tokens(trained.run, trained.vocabs))  # fmt: skip


def decode_raw_file(translator: Any, source: str, to_file: str) -> tuple[list, list[str], float]:
    """`source` translated into `to_file` as t2t-decoder --decode_from_file does:
    (source lines, outputs, seconds)."""
    from t2t_keras.serving.file_decoding import decode_file

    start = time.monotonic()
    decoded = decode_file(translator, source, to_file, out=sys.stderr)
    seconds = time.monotonic() - start
    return decoded.sources, [translation.text for translation in decoded.translations], seconds


def export(trained_dir: str, work_dir: Path, formats: Sequence[str] = EXPORTS) -> dict[str, str]:
    """t2t-exporter's exports of `trained_dir` named in `formats` (of EXPORTS): the
    SavedModel's version directory, the CTranslate2 models' directories, by runtime name."""
    exporter = [*t2t("t2t-exporter"), f"--output_dir={trained_dir}"]
    dirs = {}
    for name in formats:
        target, quantization = work_dir / name.replace(" ", "_"), name.split()[-1]
        if name == "saved_model":
            dirs[name] = run([*exporter, f"--export_dir={target}"]).splitlines()[0]
            continue
        run([*exporter, "--export_format=ctranslate2", f"--quantization={quantization}",
             f"--export_dir={target}"])  # fmt: skip
        dirs[name] = str(target)
    return dirs


def xla_cache_environment(cache_dir: str, environ: Mapping[str, str] = os.environ) -> dict:
    """`environ` with TensorFlow's persistent XLA cache in cache_dir ("": none), its other
    TF_XLA_FLAGS kept."""
    kept = environ.get("TF_XLA_FLAGS", "").split()
    kept = [flag for flag in kept if "persistent_cache" not in flag]
    if cache_dir:
        kept.append(f"--tf_xla_persistent_cache_directory={cache_dir}")
    return {**environ, "TF_XLA_FLAGS": " ".join(kept)}
