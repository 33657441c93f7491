"""The runtime flags of the binaries that decode (t2t-decoder, t2t-server), and their translators.

--runtime=tensorflow searches with our XLA-compiled slot search on a
trained model; --runtime=ctranslate2 with a CTranslate2 export of it
(t2t-exporter --export_format=ctranslate2).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from absl import flags, logging

from t2t_keras.bin import flag_groups, trained_model
from t2t_keras.errors import UserError
from t2t_keras.modes import RUNTIMES

if TYPE_CHECKING:
    from t2t_keras.run.loading import TrainedModel
    from t2t_keras.search.settings import DecodeHParams, DecodeSettings, SearchSettings
    from t2t_keras.serving.translator import SentenceTranslator, Translator

FLAGS = flags.FLAGS
CTRANSLATE2_FLAGS = (
    "ctranslate2_dir",
    "ctranslate2_threads",
    "ctranslate2_workers",
    "ctranslate2_compute_type",
)


def define_flags() -> None:
    """--runtime and the CTranslate2 runtime's flags."""
    flags.DEFINE_enum(
        "runtime",
        "tensorflow",
        list(RUNTIMES),
        "tensorflow: our XLA-compiled search on the checkpoint; ctranslate2: a CTranslate2 "
        "export (t2t-exporter --export_format=ctranslate2), pip install 't2t_keras[ctranslate2]'.",
    )
    flags.DEFINE_string(
        "ctranslate2_dir",
        None,
        "With --runtime=ctranslate2: the export to decode with (default <output_dir>/ctranslate2).",
    )
    flags.DEFINE_integer(
        "ctranslate2_threads",
        0,
        "With --runtime=ctranslate2: CPU threads of one batch (CTranslate2's intra_threads; "
        "0: the cores over --ctranslate2_workers).",
        lower_bound=0,
    )
    flags.DEFINE_integer(
        "ctranslate2_workers",
        0,
        "With --runtime=ctranslate2: batches searched at once, each with threads of its own "
        "(CTranslate2's inter_threads; 0: the cores over --ctranslate2_threads, one when "
        "sampling, so that a seed draws the same samples).",
        lower_bound=0,
    )
    flags.DEFINE_string(
        "ctranslate2_compute_type",
        "default",
        "With --runtime=ctranslate2: the type it computes in, e.g. int8 or float32 (default: the "
        "type the weights were exported in).",
    )


def check_flags() -> None:
    """Refuses a CTranslate2 flag without --runtime=ctranslate2."""
    given = [name for name in CTRANSLATE2_FLAGS if FLAGS[name].present]
    if FLAGS.runtime != "ctranslate2" and given:
        raise UserError(
            f"--{given[0]} applies to --runtime=ctranslate2; add that flag, or drop --{given[0]}."
        )


def tensorflow_translator(trained: TrainedModel, settings: DecodeSettings) -> Translator:
    from t2t_keras.serving.translator import Translator

    jit_compile = flag_groups.xla().compiles_whole_search
    tree_tokens = trained_model.tree_tokens(trained.run, trained.vocabs)
    translator = Translator(trained.model, trained.vocabs, settings, jit_compile, tree_tokens)
    logging.info("Decoding with %s (%s).", trained.checkpoint, described(settings.search))
    return translator


def described(search: SearchSettings) -> str:
    """The search settings a log line names."""
    if search.sampling:
        return (
            f"sampling {search.samples_per_input} a line, temperature {search.temperature}, "
            f"top_k {search.top_k}, top_p {search.top_p}, seed {search.seed}, "
            f"extra length {search.extra_length}"
        )
    return f"beam {search.beam_size}, alpha {search.alpha}, extra length {search.extra_length}"


def ctranslate2_translator(
    settings: DecodeHParams,
) -> tuple[SentenceTranslator, dict[str, Any], str]:
    """The CTranslate2 runtime, the run files its export records, and its timestamp file."""
    from t2t_keras.export.ctranslate2_export import import_ctranslate2, search_defaults
    from t2t_keras.export.ctranslate2_runtime import CTranslate2Translator, thread_layout
    from t2t_keras.machine import usable_cores

    import_ctranslate2()
    model_dir = FLAGS.ctranslate2_dir
    if not model_dir:
        if not FLAGS.output_dir:
            flag_groups.required(
                "ctranslate2_dir",
                "the CTranslate2 export to decode with (or --output_dir, whose "
                "ctranslate2/ directory is used)",
            )
        model_dir = os.path.join(os.path.expanduser(FLAGS.output_dir), "ctranslate2")
    info = trained_model.load_export(model_dir)
    resolved = settings.resolve(search_defaults(info))
    threads, workers = thread_layout(
        FLAGS.ctranslate2_threads,
        FLAGS.ctranslate2_workers,
        resolved.search.sampling,
        usable_cores(),
    )
    translator = CTranslate2Translator(
        model_dir, resolved, threads, FLAGS.ctranslate2_compute_type, workers
    )
    if settings.tree_constraint and trained_model.tree_tokens(info["run"], translator.vocabs):
        logging.warning(
            "The CTranslate2 runtime cannot constrain its search to trees "
            "(decode_hparams tree_constraint): outputs that are not well-formed trees over "
            "the input's words are repaired by the rules of t2t_keras/data/tree_repair.py."
        )
    logging.info(
        "Decoding with the CTranslate2 export %s of %s (%s; %d batch(es) at once, %d "
        "thread(s) each).",
        model_dir,
        info["checkpoint"],
        described(translator.settings.search),
        workers,
        threads,
    )
    checkpoint_index = f"{info['checkpoint']}.index"
    stamp = checkpoint_index if os.path.exists(checkpoint_index) else model_dir
    return translator, info["run"], stamp
