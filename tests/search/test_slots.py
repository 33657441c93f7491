"""The search in slots: a sentence's result is its own whatever its slot and
neighbours (beam, greedy, a parser under its constraint), slots are refilled the
step after their sentence finishes, and the graph path equals the host's loop."""

from __future__ import annotations

import heapq

import numpy as np
import pytest
import tensorflow as tf
from decoders import build_model

from t2t_keras.data.ids import EOS_ID, PAD_ID
from t2t_keras.data.tree_tokens import TreeTokens
from t2t_keras.search.decoder import Decoder
from t2t_keras.search.settings import DecodeHParams
from t2t_keras.search.slots import SlotSearch
from tests.search.test_search import TINY as TINY_SEARCH

TINY = TINY_SEARCH.override("max_length=40")
# Lengths from 1 to 24 tokens, shuffled: neighbours of very different lengths.
LENGTHS = [3, 24, 1, 9, 17, 2, 12, 6, 20, 4, 1, 15, 8, 11]


@pytest.fixture(scope="module")
def model():
    return build_model(TINY, 5)


def random_rows(lengths: list[int], vocab: int = 20, seed: int = 0) -> list[list[int]]:
    """Rows of random word ids (2.. vocab - 1), `length` before EOS each."""
    rng = np.random.default_rng(seed)
    return [[*rng.integers(2, vocab, size=length).tolist(), EOS_ID] for length in lengths]


def strip(ids: np.ndarray) -> list[int]:
    ids = list(ids)
    return ids[: ids.index(EOS_ID) + 1] if EOS_ID in ids else ids


def assert_same(found: tuple[np.ndarray, np.ndarray], expected: tuple[np.ndarray, np.ndarray]):
    assert [strip(h) for h in found[0]] == [strip(h) for h in expected[0]]
    np.testing.assert_allclose(found[1], expected[1], rtol=1e-5, atol=1e-6)


def settings_of(model, beam_size: int, **given):
    return DecodeHParams(beam_size=beam_size, **given).resolve(model.hparams).search


# Beam search compiled, as decoded; greedy search eagerly (XLA changes no result:
# test_search's test_xla_on_and_off_decode_the_same).
@pytest.mark.parametrize(("beam_size", "jit_compile"), [(4, True), (1, False)])
def test_a_sentence_decodes_alone_as_among_others(model, beam_size: int, jit_compile: bool):
    """Through 3 slots with neighbours of 1 to 24 words, and alone in a slot of its
    own: the same hypotheses, the same scores, and those of the batch search."""
    settings = settings_of(model, beam_size, extra_length=6, return_beams=True)
    rows = random_rows(LENGTHS)
    shared = SlotSearch(model, settings, jit_compile=jit_compile, slots=3).decode(rows)
    alone = SlotSearch(model, settings, jit_compile=jit_compile, slots=1)
    width = max(len(row) for row in rows)
    padded = tf.constant([row + [PAD_ID] * (width - len(row)) for row in rows])
    batch_ids, batch_scores = Decoder(model, settings, jit_compile=jit_compile)(padded)
    for row, found, ids, scores in zip(rows, shared, batch_ids, batch_scores, strict=True):
        (expected,) = alone.decode([row])
        assert_same(found, expected)
        assert_same(found, (ids.numpy(), scores.numpy()))


def test_small_empty_slots_are_made_once_and_stay_empty(model):
    """Lines typed one by one: one search's empty slots are made once for their shape,
    and each line is searched from empty slots (the same result first and last)."""
    search = SlotSearch(model, settings_of(model, 4, extra_length=6), slots=1)
    made = []
    empty = search.empty
    search.empty = lambda *shape: made.append(shape) or empty(*shape)
    one, other = random_rows([5, 3], seed=1)
    first, _, last = (search.decode([row])[0] for row in (one, other, one))
    assert len(made) == 1
    assert_same(last, first)
    assert_same(last, SlotSearch(model, search.settings, slots=1).decode([one])[0])


def test_a_long_tail_is_searched_in_wider_slots_of_its_own(model):
    """One sentence of 30 tokens among 20 of 2 to 5: it goes through slots of its
    width, the others through narrower ones (two shapes), each as the batch search."""
    settings = settings_of(model, 2, extra_length=4, return_beams=True)
    rows = random_rows([30, *[2 + i % 4 for i in range(20)]], seed=4)
    search = SlotSearch(model, settings, jit_compile=False, slots=2)
    found = search.decode(rows)
    assert search.compilations() == 2
    width = max(len(row) for row in rows)
    padded = tf.constant([row + [PAD_ID] * (width - len(row)) for row in rows])
    batch_ids, batch_scores = Decoder(model, settings, jit_compile=False)(padded)
    for result, ids, scores in zip(found, batch_ids, batch_scores, strict=True):
        assert_same(result, (ids.numpy(), scores.numpy()))


def step_counts(model, settings, rows: list[list[int]]) -> tuple[list[int], list[int]]:
    """(The slot-steps each row's search takes alone, the tokens of its best output
    with EOS)."""
    alone = SlotSearch(model, settings, jit_compile=False, slots=1)
    counts, tokens = [], []
    for row in rows:
        before = alone.busy_steps
        ((ids, _),) = alone.decode([row])
        counts.append(alone.busy_steps - before)
        tokens.append(len(strip(ids[0])))
    return counts, tokens


@pytest.mark.parametrize("beam_size", [1, 3])
def test_a_slot_takes_the_next_sentence_the_step_after_its_own_ends(model, beam_size: int):
    """Slot-steps equal those of slots refilled at once: each of N slots, in order,
    takes the next sentence (longest input first) the step after its sentence ends."""
    settings = settings_of(model, beam_size, extra_length=6)
    rows = random_rows(LENGTHS)
    steps, _ = step_counts(model, settings, rows)
    slots = 3
    search = SlotSearch(model, settings, jit_compile=False, slots=slots)
    search.decode(rows)
    free_at = [0] * slots  # The step at which each slot frees.
    for index in sorted(range(len(rows)), key=lambda i: -len(rows[i])):
        start = heapq.heappop(free_at)
        heapq.heappush(free_at, start + steps[index])
    assert search.busy_steps == sum(steps)
    assert search.slot_steps == slots * max(free_at)


def test_a_beam_search_takes_its_slot_after_its_first_position(model):
    """Until its first token a sentence's beams are one: beam search runs that
    position on one row a sentence as the block is encoded, so a slot holds an
    output of n tokens and EOS for n steps, where greedy search takes n + 1."""
    rows = random_rows([3, 5, 6], seed=5)
    forced = {"extra_length": 3, "min_length": 100}  # Every output at its limit.
    greedy, beam = (step_counts(model, settings_of(model, k, **forced), rows) for k in (1, 3))
    limits = [len(row) + 3 + 1 for row in rows]  # Tokens to the limit, then EOS.
    assert greedy == (limits, limits)
    assert beam == ([n - 1 for n in limits], limits)


def parser_model():
    """A tiny model reading the next word's encoding as parsers do, with the tree
    symbols of test_tree_constraint: "(A" ")A" "(B" ")B" XX = 3..7, words 3..8."""
    hparams = TINY.override("leaf_words=true,leaf_id=7,vocab_size=9")
    model = build_model(hparams, seed=2)
    model.set_word_starts([3, 4, 5, 6, 7, 8])
    tokens = TreeTokens(
        open_ids=(3, 5), close_ids=(4, 6), leaf_id=7,
        word_start_ids=(3, 4, 5, 6, 7, 8), inputs_vocab_size=9,
    )  # fmt: skip
    return model, tokens


@pytest.mark.parametrize("beam_size", [1, 3])
def test_a_parsers_constrained_search_is_the_same_alone_and_among_others(beam_size: int):
    model, tokens = parser_model()
    settings = settings_of(model, beam_size, extra_length=8, return_beams=True)
    rows = random_rows([2, 9, 1, 5, 7, 3], vocab=9, seed=1)
    shared = SlotSearch(model, settings, tokens, jit_compile=False, slots=2).decode(rows)
    alone = SlotSearch(model, settings, tokens, jit_compile=False, slots=1)
    for row, found in zip(rows, shared, strict=True):
        assert_same(found, alone.decode([row])[0])
        best = strip(found[0][0])
        words = sum(1 for token in row if 3 <= token <= 8)
        assert best.count(7) == words  # One XX a word.


def test_the_graph_loop_equals_the_hosts(model):
    """`search_tensor` (the SavedModel's path: TensorFlow ops only) returns what
    `decode` does, in the rows' order."""
    settings = settings_of(model, 2, extra_length=4, return_beams=True)
    rows = random_rows(LENGTHS[:9], seed=3)
    assert_graph_loop_is_the_hosts(SlotSearch(model, settings, jit_compile=True, slots=2), rows)


def assert_graph_loop_is_the_hosts(search: SlotSearch, rows: list[list[int]]) -> None:
    width = max(len(row) for row in rows)
    padded = tf.constant([row + [PAD_ID] * (width - len(row)) for row in rows])
    ids, scores = search.search_tensor(padded)
    for row_ids, row_scores, expected in zip(ids, scores, search.decode(rows), strict=True):
        assert_same((row_ids.numpy(), row_scores.numpy()), expected)


def test_the_graph_loops_last_sentences_drained_into_fewer_slots_are_the_hosts(model):
    """In 8 slots, the graph loop's last sentences go on in 4 (`halved`), each beam
    row's parent moved with it: beam search of beam 1 too (its parents are rows)."""
    settings = settings_of(model, 1, extra_length=4, stopping="best_possible")
    rows = random_rows(LENGTHS + LENGTHS[:2], seed=4)
    assert_graph_loop_is_the_hosts(SlotSearch(model, settings, jit_compile=False, slots=8), rows)


@pytest.mark.parametrize("beam_size", [1, 3])
def test_outputs_longer_than_the_first_slots_are_searched_again_to_the_same_result(
    model, beam_size: int
):
    """Slots holding 2 positions past the input evict the outputs that run longer
    (an untrained model's often do): searched again in slots holding all 12, every
    output is the one-pass search's, on the host's loop and in the graph; a job of
    a few rows is searched in one pass."""
    one_pass = settings_of(model, beam_size, extra_length=12, return_beams=True)
    rows = random_rows([3, 7, 1, 5, 2, 6, 4, 1, 7, 2], seed=5)
    expected = SlotSearch(model, one_pass, jit_compile=False, slots=2).decode(rows)
    settings = settings_of(
        model, beam_size, extra_length=12, slot_extra_length=2, return_beams=True
    )
    search = SlotSearch(model, settings, jit_compile=False, slots=2)
    for found, wanted in zip(search.decode(rows), expected, strict=True):
        assert_same(found, wanted)
    # Rows 8 wide: 8 + 2 + 1 positions first, then 8 + 12 + 1 for the evicted.
    assert {length for _, _, length in search.searched_shapes()} == {11, 21}
    # Fewer than 4 rows a slot (a typed line): one pass, never a second compilation.
    few = SlotSearch(model, settings, jit_compile=False, slots=2)
    for found, wanted in zip(few.decode(rows[:7]), expected, strict=False):
        assert_same(found, wanted)
    assert {length for _, _, length in few.searched_shapes()} == {21}
    width = max(len(row) for row in rows)
    padded = tf.constant([row + [PAD_ID] * (width - len(row)) for row in rows])
    ids, scores = search.search_tensor(padded)
    for row_ids, row_scores, wanted in zip(ids, scores, expected, strict=True):
        assert_same((row_ids.numpy(), row_scores.numpy()), wanted)


def test_a_sentences_samples_split_between_the_two_passes_come_back_together(model):
    """Samples of one sentence, some evicted and searched again in wider slots, some
    not: each sentence's samples are those of the one-pass search, best first."""
    given = dict(sampling=True, samples_per_input=3, seed=7, extra_length=12)
    one_pass = DecodeHParams(**given).resolve(model.hparams).search
    two_passes = DecodeHParams(**given, slot_extra_length=2).resolve(model.hparams).search
    rows = random_rows([3, 7, 1, 5, 2, 6, 4, 1, 7, 2], seed=6)
    expected = SlotSearch(model, one_pass, jit_compile=False, slots=2).decode(rows)
    search = SlotSearch(model, two_passes, jit_compile=False, slots=2)
    for found, wanted in zip(search.decode(rows), expected, strict=True):
        assert_same(found, wanted)
    assert len({length for _, _, length in search.searched_shapes()}) == 2  # Both passes.
