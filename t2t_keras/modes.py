"""How a run uses the machine (XLA, precision, the distribution strategy), and where data comes from.

One list of values and one meaning for each, shared by every binary and the
library. Nothing here imports TensorFlow, so the binaries' flags and their
errors answer at once.
"""

from __future__ import annotations

import dataclasses

from t2t_keras.errors import UserError

XLA_MODES = ("off", "attention", "full")
# How a beam search's length penalty divides a hypothesis's log-probability by its length
# n (EOS counted): "gnmt" by ((5 + n) / 6) ** alpha (GNMT's, tensor2tensor's), "length" by
# n ** alpha (Hugging Face's, fairseq's, CTranslate2's).
LENGTH_PENALTIES = ("gnmt", "length")
# How a decoder starts: "pad", the PAD row's embedding at the first position (ours,
# Hugging Face's); "zero", no token there (CTranslate2's Marian models). Both add the
# first position's signal.
DECODER_STARTS = ("pad", "zero")
# What a search's dense products run in (`search.decoder.Decoder`).
DECODE_PRECISIONS = ("float32", "bfloat16")
XLA_HELP = (
    "XLA compilation. off: none; attention: the attention cores and the training loss; full: "
    "those and every whole function around them: each replica's train step (t2t-trainer) and the "
    "beam or greedy search, encoder included (t2t-decoder, t2t-exporter, and the trainer's "
    "dev BLEU). The default is full where a model decodes (the compiled search is the fast "
    "path) and attention in training (compiling the whole step takes long and not every "
    "device allows it)."
)
PRECISIONS = ("off", "fp16", "bf16")
# --mixed_precision's choices: "auto" is resolved to one of PRECISIONS where
# the devices are known (t2t_keras.training.hardware.resolve_mixed_precision).
PRECISION_AUTO = "auto"
PRECISION_CHOICES = (PRECISION_AUTO, *PRECISIONS)
PRECISION_HELP = (
    "auto: bfloat16 where the hardware runs it natively (a GPU of compute capability 8.0 or "
    "more; a CPU with AVX512_BF16 or AMX whose bfloat16 products run at least 1.2x faster than "
    "float32's), float32 elsewhere; off: float32; fp16: float16 with dynamic loss scaling; "
    "bf16: bfloat16."
)
STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")
# Where a translation problem with several sources reads its corpus (--data_source):
# "auto" chooses among the others (`TranslateProblem.sources`).
# --runtime of the commands that decode: our search on a checkpoint, or a CTranslate2 export.
RUNTIMES = ("tensorflow", "ctranslate2")
DATA_SOURCE_AUTO = "auto"
DATA_SOURCES = ("local", "tfds", "archives")


@dataclasses.dataclass(frozen=True)
class Xla:
    """An --xla mode and what it compiles.

    Args:
      mode: one of XLA_MODES.
    """

    mode: str = "attention"

    def __post_init__(self) -> None:
        if self.mode not in XLA_MODES:
            raise UserError(
                f"--xla={self.mode} is not an XLA mode; accepted: {', '.join(XLA_MODES)}."
            )

    @property
    def compiles_attention(self) -> bool:
        """Each attention core is one XLA-compiled function, and so is the training loss."""
        return self.mode != "off"

    @property
    def compiles_whole_search(self) -> bool:
        """The whole beam or greedy search is one XLA-compiled function."""
        return self.mode == "full"

    @property
    def compiles_whole_step(self) -> bool:
        """Each replica's whole train step is one XLA-compiled function."""
        return self.mode == "full"
