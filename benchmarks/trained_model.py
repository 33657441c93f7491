"""A trained model as the decoding benchmarks use it: its translator, built as t2t-decoder
builds it, its exports, the raw file it decodes and XLA's compilation cache.

TensorFlow loads when a translator is built, not on import: `decode_files.py`
times the start-up of a process that imports this.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from t2t_commands import run, t2t

MULTI30K = Path(__file__).resolve().parents[2] / "shared" / "data" / "multi30k"
# The raw file the decoding benchmarks decode by default, and its references.
TEST_SOURCE, TEST_REFERENCE = (str(MULTI30K / f"test_2016_flickr.{side}") for side in ("en", "de"))


def source_lines(path: str, limit: int = 0) -> list[str]:
    """The lines of a raw text file; its first `limit` lines if given."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return lines[:limit] if limit else lines


def load_translator(
    run_dir: str,
    *decode_hparams: str,
    xla: str = "full",
    tree_constraint: Callable[[Any], Any] | None = None,
) -> tuple[Any, Any]:
    """(`load_trained`'s model, its Translator) of `run_dir` (a training directory or its
    averaged/), as t2t-decoder builds them for --xla=`xla`: each of `decode_hparams`
    overrides the ones before; `tree_constraint` (a problem's: vocabularies -> tree
    tokens) if it decodes trees."""
    from t2t_keras import catalog
    from t2t_keras.modes import Xla
    from t2t_keras.run.loading import load_trained
    from t2t_keras.search.settings import DecodeHParams
    from t2t_keras.serving.translator import Translator

    catalog.load()
    mode = Xla(xla)
    trained = load_trained(run_dir, use_xla=mode.compiles_attention)
    settings = DecodeHParams()
    for overrides in decode_hparams:
        settings = settings.override(overrides)
    tree_tokens = tree_constraint(trained.vocabs) if tree_constraint else None
    translator = Translator(trained.model, trained.vocabs, settings.resolve(trained.hparams),
                            jit_compile=mode.compiles_whole_search, tree_tokens=tree_tokens)  # fmt: skip
    return trained, translator


def decode_raw_file(translator: Any, source: str, to_file: str) -> tuple[list, list[str], float]:
    """`source` translated into `to_file` as t2t-decoder --decode_from_file does:
    (source lines, outputs, seconds)."""
    from t2t_keras.serving.file_decoding import decode_file

    start = time.monotonic()
    decoded = decode_file(translator, source, to_file, out=sys.stderr)
    seconds = time.monotonic() - start
    return decoded.sources, [translation.text for translation in decoded.translations], seconds


def export(trained_dir: str, work_dir: Path) -> dict[str, str]:
    """t2t-exporter's SavedModel (its version directory) and CTranslate2 models (float32,
    int8) of `trained_dir`, by runtime name."""
    exporter = [*t2t("t2t-exporter"), f"--output_dir={trained_dir}"]
    saved = run([*exporter, f"--export_dir={work_dir / 'saved_model'}"])
    dirs = {"saved_model": saved.splitlines()[0]}
    for quantization in ("float32", "int8"):
        target = work_dir / f"ctranslate2_{quantization}"
        run([*exporter, "--export_format=ctranslate2", f"--quantization={quantization}",
             f"--export_dir={target}"])  # fmt: skip
        dirs[f"ctranslate2 {quantization}"] = str(target)
    return dirs


def xla_cache_environment(cache_dir: str, environ: Mapping[str, str] = os.environ) -> dict:
    """`environ` with TensorFlow's persistent XLA cache in cache_dir ("": none), its other
    TF_XLA_FLAGS kept."""
    kept = environ.get("TF_XLA_FLAGS", "").split()
    kept = [flag for flag in kept if "persistent_cache" not in flag]
    if cache_dir:
        kept.append(f"--tf_xla_persistent_cache_directory={cache_dir}")
    return {**environ, "TF_XLA_FLAGS": " ".join(kept)}
