"""Translating with a CTranslate2 export: the same lines in and out as `Translator`.

Sentences are encoded with the export's SentencePiece model(s) exactly as the
TensorFlow runtime encodes them (cut to max_length, EOS appended), sorted by
length, and given to `ctranslate2.Translator.translate_batch` as pieces. The
search settings mean what they mean in `t2t_keras.search.beam`:

  - beam_size, min_length: the same.
  - the longest output, input length + extra_length tokens before EOS (never
    more than max_length - 1): CTranslate2 has one length limit per call, so
    a batch is decoded in one call under its longest sentence's limit. Up to
    a sentence's own limit L the search is the same under any longer one; a
    sentence is searched again under L only when one of its hypotheses
    reached L tokens (EOS counted), the one case where a longer limit can
    change its result: a trained model's outputs rarely do, so a batch is
    one call. An output that reaches its limit ends there (we add the EOS
    ours forces there).
  - PAD is never produced (`suppress_sequences`).
  - the length penalty and stopping: both beam searches keep the best
    beams by log-probability alone, take EOS extensions from the first
    beam_size candidates as finished, and stop a sentence at beam_size
    finished hypotheses (our "first_k"; "best_possible" is refused); the
    penalty only ranks the finished ones. CTranslate2's own penalty is
    n ** length_penalty (n tokens, EOS counted; our `length_penalty=length`),
    and at 0 it stops as soon as its best beam has finished. So it is asked
    for every finished hypothesis under a negligible penalty, which keeps
    the first_k rule, and they are ranked here under ours, GNMT's by default.

Sampling (sampling=true) is CTranslate2's random sampling: beam size 1,
samples_per_input hypotheses, top_k (0: the whole vocabulary, as ours),
top_p and temperature as ours. Its random generator is its own: the samples
follow the TensorFlow runtime's distribution but are others. It starts from
`seed` when a translator first samples (CTranslate2 seeds its worker's
generator once), so the first `translate` of a CTranslate2Translator, such
as t2t-decoder's of a file, draws the same samples for the same inputs,
settings and seed; later calls go on drawing. A sentence's samples also
depend on the batch it is drawn in (batch_size, its neighbours, and whether
one of them is sampled again under its own limit), not only on the seed and
its line as the TensorFlow runtime's.

Scores are the TensorFlow runtime's: the log-probability over our penalty.
Residual differences: CTranslate2 renormalizes the probabilities after
barring PAD (and EOS before min_length) where ours does not, which raises its
scores by a few thousandths; an output cut at its limit lacks the
log-probability of the EOS ours forces there; and when more than beam_size
hypotheses have finished when a sentence stops, CTranslate2 keeps the
likeliest beam_size where ours keeps the best beam_size under the penalty.
Each rarely changes which output is best; the last, with return_beams, more
often changes the lower beams.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from t2t_keras.data.ids import EOS_ID, UNK_ID
from t2t_keras.errors import UserError
from t2t_keras.export.ctranslate2_export import QUANTIZATIONS, import_ctranslate2, read_info
from t2t_keras.export.ctranslate2_spec import PAD_PIECE, vocabulary_pieces
from t2t_keras.models.transformer_hparams import TransformerHParams
from t2t_keras.run.loading import load_vocabs
from t2t_keras.search.settings import DecodeSettings, SearchSettings
from t2t_keras.serving.translator import PendingBatch, SentenceTranslator, Translation

# CTranslate2's length_penalty: at 0 it stops as soon as its top beam has
# finished, whatever else is alive; any other value stops at beam_size
# finished hypotheses, our "first_k". This one ranks as 0 does.
_NEARLY_ZERO = 1e-9
# CTranslate2's compute types: "default" keeps the type the weights were
# exported in, "auto" picks the fastest; the others as `QUANTIZATIONS`.
COMPUTE_TYPES = ("default", "auto", *QUANTIZATIONS)


class _CTranslate2Batch(PendingBatch):
    """A batch in CTranslate2's worker: its search under the longest limit, then (in
    result()) again for the few sentences that limit could change."""

    def __init__(
        self,
        translator: CTranslate2Translator,
        sources: list[list[str]],
        limits: list[int],
        results: list[Any],
    ) -> None:
        self._translator, self._sources, self._limits = translator, sources, limits
        self._pending = results
        self._results: list[Any] | None = None

    def done(self) -> bool:
        return self._results is not None or all(result.done() for result in self._pending)

    def wait(self) -> None:
        if self._results is None:
            self._results = [result.result() for result in self._pending]

    def result(self) -> list[Translation]:
        self.wait()
        assert self._results is not None
        held = self._translator._held(self._sources, self._limits, self._results)
        return [self._translator._translation(result) for result in held]


class CTranslate2Translator(SentenceTranslator):
    """Decodes text with a CTranslate2 export of a trained model.

    Args:
      model_dir: the directory t2t-exporter --export_format=ctranslate2 wrote.
      settings: the search and batching settings, resolved against the
        export's defaults: `resolve(search_defaults(read_info(model_dir)))`.
      threads: CPU threads of one translation (CTranslate2's intra_threads;
        0 lets it choose).
      workers: batches searched at once, each by `threads` threads of its own
        (CTranslate2's inter_threads).
      compute_type: the type CTranslate2 computes in (COMPUTE_TYPES); "default"
        is the exported one, so an int8 export runs in int8.
    """

    def __init__(
        self,
        model_dir: str,
        settings: DecodeSettings,
        threads: int = 0,
        compute_type: str = "default",
        workers: int = 1,
    ) -> None:
        ctranslate2 = import_ctranslate2()
        model_dir = os.path.expanduser(model_dir)
        self.info = read_info(model_dir)
        self.settings, self.workers = settings, workers
        _check_settings(settings.search, compute_type)
        self.vocabs = load_vocabs(model_dir, self.info["run"])
        self.max_length = int(self.info["max_length"])
        # The pieces ctranslate2_spec registered: each side as many as its embedding's rows.
        model_hparams = TransformerHParams(**self.info["hparams"])
        target_pieces = vocabulary_pieces(
            self.vocabs["targets"], model_hparams.targets_vocab_size()
        )
        self._target_ids = {piece: i for i, piece in enumerate(target_pieces)}
        self._source_pieces = vocabulary_pieces(self.vocabs["inputs"], model_hparams.vocab_size)
        try:
            self.translator = ctranslate2.Translator(
                model_dir,
                device="cpu",
                compute_type=compute_type,
                inter_threads=workers,
                intra_threads=threads,
            )
        except (RuntimeError, ValueError) as error:
            raise UserError(
                f"CTranslate2 cannot load the model in {model_dir} ({error}); export it "
                "again with t2t-exporter --export_format=ctranslate2."
            ) from None

    def _limit(self, row: list[int]) -> int:
        """Most tokens before EOS for an input row (`search.decoder.decode_limits`)."""
        return min(len(row) + self.settings.search.extra_length, self.max_length - 1)

    def translate(
        self,
        sentences: Sequence[str],
        report: Callable[[int, int, float], None] | None = None,
        first: int = 0,
    ) -> list[Translation]:
        """As every runtime's; the first sampling starts CTranslate2's generator from
        `seed` (its draws follow its own stream, not the sentences' numbers)."""
        if self.settings.search.sampling:
            import_ctranslate2().set_random_seed(self.settings.search.seed)
        return super().translate(sentences, report, first)

    def submit_batch(self, rows: list[list[int]]) -> PendingBatch:
        """As every runtime's: one `translate_batch` call in CTranslate2's workers, each
        sentence held to its own limit; its result() waits for them."""
        sources = [[self._source_pieces[token] for token in row] for row in rows]
        limits = [self._limit(row) for row in rows]
        return _CTranslate2Batch(self, sources, limits, self._search(sources, max(limits), True))

    def _search(
        self, sources: list[list[str]], limit: int, asynchronous: bool = False
    ) -> list[Any]:
        """`translate_batch`'s results of the sources, each of at most `limit` tokens before
        EOS (results to wait for, if asynchronous)."""
        search = self.settings.search
        return self.translator.translate_batch(
            sources,
            asynchronous=asynchronous,
            **_search_options(search),
            length_penalty=_NEARLY_ZERO,
            # CTranslate2 counts every token it generates, EOS included, and stops a
            # hypothesis after `limit` of them: at most `limit` before EOS, as ours.
            max_decoding_length=limit,
            min_decoding_length=min(search.min_length, limit),
            max_input_length=0,  # Rows are cut to max_length already.
            return_scores=True,
            return_end_token=True,
            suppress_sequences=[[PAD_PIECE]],
        )

    def _held(self, sources: list[list[str]], limits: list[int], results: list[Any]) -> list[Any]:
        """The results searched under max(limits), each sentence's as under its own limit.

        A search runs the same steps under any limit up to the step that reaches
        the shorter one. So a sentence all of whose hypotheses ended before its
        own limit L has the result it would have under L; one whose hypothesis
        reached L tokens (EOS counted; at the last step CTranslate2 ends every
        beam) is searched again, with the others that did, under the longest of
        their limits, and so on.
        """
        longest = max(limits)
        again = [
            at
            for at, (result, limit) in enumerate(zip(results, limits, strict=True))
            if limit < longest and max(map(len, result.hypotheses), default=0) >= limit
        ]
        if not again:
            return results
        sources_again, limits_again = [sources[at] for at in again], [limits[at] for at in again]
        searched = self._search(sources_again, max(limits_again))
        held = list(results)
        for at, result in zip(
            again, self._held(sources_again, limits_again, searched), strict=True
        ):
            held[at] = result
        return held

    def _translation(self, result: Any) -> Translation:
        """The hypotheses of one sentence, ranked by our length penalty; the best or all."""
        ranked = []
        for hypothesis, score in zip(result.hypotheses, result.scores, strict=True):
            ids = [self._target_ids.get(piece, UNK_ID) for piece in hypothesis]
            if not ids or ids[-1] != EOS_ID:
                ids.append(EOS_ID)  # Cut at its limit, where ours forces EOS.
            log_prob = score * max(len(hypothesis), 1) ** _NEARLY_ZERO
            ranked.append((log_prob / self._penalty(len(ids)), ids))
        ranked.sort(key=lambda scored: -scored[0])
        kept = ranked[: self.settings.search.num_returned]
        return Translation(
            texts=[self.vocabs["targets"].decode(ids) for _, ids in kept],
            scores=[score for score, _ in kept],
            ids=[ids for _, ids in kept],
        )

    def _penalty(self, length: int) -> float:
        """Our length penalty of an output of `length` tokens, EOS included (`search.rules.length_penalty`)."""
        alpha = self.settings.search.alpha
        if self.settings.search.length_penalty == "gnmt":
            return ((5.0 + length) / 6.0) ** alpha
        return float(length) ** alpha


def thread_layout(threads: int, workers: int, sampling: bool, cores: int) -> tuple[int, int]:
    """CTranslate2's (threads a batch, batches at once) for the flags' values (0: choose).

    Unset, each core searches a batch of its own with one thread: its kernels
    use a second thread poorly (test_2016_flickr on 2 cores of a Xeon: one
    thread 116 sentences/s, two 133, two workers of one thread 238). Sampling
    keeps one worker, so that a seed draws the same samples on every run.
    """
    if not workers:
        workers = 1 if sampling else max(1, cores // max(threads, 1))
    if not threads:
        threads = max(1, cores // workers)
    return threads, workers


def _search_options(search: SearchSettings) -> dict[str, Any]:
    """`translate_batch`'s options of the beam or of sampling."""
    if search.sampling:
        return {
            "beam_size": 1,
            "num_hypotheses": search.samples_per_input,
            "sampling_topk": search.top_k,  # 0: the whole vocabulary, as ours.
            "sampling_topp": search.top_p,
            "sampling_temperature": search.temperature,
        }
    # Every finished hypothesis, ranked here by our penalty.
    return {"beam_size": search.beam_size, "num_hypotheses": search.beam_size}


def _check_settings(settings: SearchSettings, compute_type: str) -> None:
    """Refuses what CTranslate2 cannot do as asked."""
    if settings.stopping != "first_k":
        raise UserError(
            f"--decode_hparams stopping={settings.stopping} has no CTranslate2 equivalent: "
            "CTranslate2 stops a sentence once beam_size hypotheses have finished "
            "(stopping=first_k). Drop it, or decode with --runtime=tensorflow."
        )
    if compute_type not in COMPUTE_TYPES:
        raise UserError(
            f"unknown CTranslate2 compute type {compute_type!r}; accepted: "
            f"{', '.join(COMPUTE_TYPES)} (default: the type the model was exported in)."
        )
