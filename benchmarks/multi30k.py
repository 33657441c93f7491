"""Multi30k from ../shared/data for the benchmarks: the data layout and the test scoring.

Ours (`train_multi30k.py`) and the peer (`peers_multi30k.py`) read the same data and
vocabulary through it and score the raw test files alike, so their JSON lines compare.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Sequence

from absl import flags, logging
from sacrebleu.metrics import BLEU

from t2t_keras.files import read_text_lines

SHARED_DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")
flags.DEFINE_string("shared_data", SHARED_DATA, "Folder holding multi30k/.")
flags.DEFINE_list("test_sets", ["test_2016_flickr", "val"], "Multi30k sets decoded from their "
                  "raw .en files and scored against their raw .de.")  # fmt: skip

PROBLEM = "text2text_tmpdir"


def corpus_path(name: str, language: str) -> str:
    """The raw Multi30k file `name.language`, e.g. test_2016_flickr.en."""
    return os.path.join(flags.FLAGS.shared_data, "multi30k", f"{name}.{language}")


def prepare_data(work_dir: str) -> str:
    """Generates the problem's data (8k BPE, TFRecords) from Multi30k's train and val
    (En->De) once; returns data_dir. Both benchmarks call it on the same work_dir,
    so they share one vocabulary."""
    tmp_dir, data_dir = os.path.join(work_dir, "tmp"), os.path.join(work_dir, "data")
    if not os.path.exists(os.path.join(data_dir, f"vocab.{PROBLEM}.model")):
        # TensorFlow only when the data is made: the PyTorch peer then runs without it.
        from t2t_keras import catalog, registry

        catalog.load()
        os.makedirs(tmp_dir, exist_ok=True)
        for split, name in (("train", "train"), ("dev", "val")):
            for side, language in (("src", "en"), ("tgt", "de")):
                shutil.copy(corpus_path(name, language), f"{tmp_dir}/{split}.{side}")
        registry.problem(PROBLEM).generate_data(data_dir, tmp_dir)
    return data_dir


def score(sources: Sequence[str], hypotheses: Sequence[str], references: Sequence[str]) -> dict:
    """sacreBLEU (cased, 13a) of raw outputs, with what users look at beside it: bleu, bp
    (brevity penalty), ratio (hypothesis / reference length), empty_outputs (for
    non-empty inputs), sentences, and sacreBLEU's own line."""
    bleu = BLEU()
    result = bleu.corpus_score(list(hypotheses), [list(references)])
    pairs = zip(sources, hypotheses, strict=True)
    empty = sum(1 for source, output in pairs if source and not output)
    return {
        "bleu": round(result.score, 2),
        "bp": round(result.bp, 3),
        "ratio": round(result.sys_len / result.ref_len, 3),
        "empty_outputs": empty,
        "sentences": len(hypotheses),
        "sacrebleu": f"{result} {bleu.get_signature()}",
    }


def score_test_sets(
    decode: Callable[[str, str], tuple[Sequence[str], Sequence[str]]], out_prefix: str
) -> dict[str, dict]:
    """Each of --test_sets decoded by `decode(raw source file, outputs' file) -> (sources,
    outputs)`, the outputs to out_prefix + "<test set>.decodes", timed and scored."""
    results = {}
    for name in flags.FLAGS.test_sets:
        start = time.monotonic()
        sources, outputs = decode(corpus_path(name, "en"), f"{out_prefix}{name}.decodes")
        seconds = time.monotonic() - start
        result = results[name] = score(sources, outputs, read_text_lines(corpus_path(name, "de")))
        result["decode_seconds"] = round(seconds, 1)
        result["sentences_per_second"] = round(len(sources) / seconds, 2)
        logging.info("%s: %s", name, result["sacrebleu"])
    return results
