"""Several trained models decoding as one: their log-probabilities averaged at each step.

`Ensemble` offers what the searches call of a model (`IncrementalDecoding`'s
methods), so greedy and beam search, slots and constraints work on it
unchanged. Each member keeps its own encoder memory and self-attention
caches; every step runs each member's step and returns the mean of their
log-probabilities, which the search then treats as one model's logits.
Members may differ in architecture; they must share the target vocabulary
(checked where they are loaded, `run.loading.load_ensemble`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from t2t_keras.models.decoding import DecodingMemory, DecodingState, StepFunction


class Ensemble(tf.Module):
    """The members' mean log-probability at every step, through the decoding interface.

    Args:
      members: built models with `IncrementalDecoding`'s methods and the same
        target vocabulary size.
    """

    def __init__(self, members: Sequence[Any]) -> None:
        super().__init__(name="ensemble")
        if len(members) < 2:
            raise ValueError(f"an ensemble needs at least two models, got {len(members)}.")
        widths = {member.hparams.targets_vocab_size() for member in members}
        if len(widths) > 1:
            raise ValueError(f"ensemble members have different target vocabularies: {widths}.")
        self.members = list(members)
        # What the searches read of hparams: the longest input every member can take.
        self.hparams = dataclasses.replace(
            members[0].hparams, max_length=min(member.hparams.max_length for member in members)
        )

    def start_decoding(
        self, inputs: tf.Tensor, cache_length: int | tf.Tensor, beam_size: int = 1
    ) -> tuple[DecodingState, StepFunction]:
        memory = self.encode_for_decoding(inputs, beam_size)
        batch = inputs.shape[0] if inputs.shape[0] is not None else tf.shape(inputs)[0]
        state = self.empty_decoding_state(batch, cache_length, beam_size)
        return state, self.decoding_step(memory, cache_length, beam_size)

    def encode_for_decoding(self, inputs: tf.Tensor, beam_size: int = 1) -> DecodingMemory:
        return {"members": [m.encode_for_decoding(inputs, beam_size) for m in self.members]}

    def empty_decoding_memory(
        self, batch: int | tf.Tensor, width: int | tf.Tensor, beam_size: int = 1
    ) -> DecodingMemory:
        return {"members": [m.empty_decoding_memory(batch, width, beam_size) for m in self.members]}

    def widened_decoding_memory(self, memory: DecodingMemory, width: int) -> DecodingMemory:
        return {
            "members": [
                member.widened_decoding_memory(own, width)
                for member, own in zip(self.members, memory["members"], strict=True)
            ]
        }

    def empty_decoding_state(
        self, batch: tf.Tensor | int, cache_length: int | tf.Tensor, beam_size: int
    ) -> DecodingState:
        return _prefixed(
            [m.empty_decoding_state(batch, cache_length, beam_size) for m in self.members]
        )

    def fresh_decoding_rows(
        self, batch: tf.Tensor | int, cache_length: int | tf.Tensor, beam_size: int
    ) -> DecodingState:
        return _prefixed(
            [m.fresh_decoding_rows(batch, cache_length, beam_size) for m in self.members]
        )

    def start_one_row(
        self, memory: DecodingMemory, beam_size: int
    ) -> tuple[DecodingState, StepFunction]:
        """Each member's first position on one row a sentence, as one step."""
        starts = [
            member.start_one_row(own, beam_size)
            for member, own in zip(self.members, memory["members"], strict=True)
        ]
        return _prefixed([state for state, _ in starts]), _mean_step([s for _, s in starts])

    def first_positions(
        self, state: DecodingState, first: DecodingState, taken: tf.Tensor, source: tf.Tensor
    ) -> DecodingState:
        count = len(self.members)
        return _prefixed([
            member.first_positions(own, own_first, taken, source)
            for member, own, own_first in zip(
                self.members, _split(state, count), _split(first, count), strict=True
            )
        ])  # fmt: skip

    def decoding_step(
        self, memory: DecodingMemory, cache_length: int | tf.Tensor, beam_size: int = 1
    ) -> StepFunction:
        """Each member's step over its own memory and state; the mean of their
        log-probabilities [B * K, V] float32 as the logits."""
        return _mean_step([
            member.decoding_step(own, cache_length, beam_size)
            for member, own in zip(self.members, memory["members"], strict=True)
        ])  # fmt: skip


def _mean_step(steps: Sequence[StepFunction]) -> StepFunction:
    """One step of the members' `steps`, each over its own state: the mean of their
    log-probabilities [B * K, V] float32 as the logits."""

    def step(
        state: DecodingState, index: tf.Tensor, ids: tf.Tensor, parents: tf.Tensor | None
    ) -> tuple[tf.Tensor, DecodingState]:
        log_probs, new_states = [], []
        for own_step, own_state in zip(steps, _split(state, len(steps)), strict=True):
            logits, new_state = own_step(own_state, index, ids, parents)
            log_probs.append(tf.nn.log_softmax(tf.cast(logits, tf.float32)))
            new_states.append(new_state)
        return tf.add_n(log_probs) / len(log_probs), _prefixed(new_states)

    return step


def _prefixed(states: Sequence[DecodingState]) -> DecodingState:
    """The members' states as one flat dict, "<member>/<key>": the slots replace some keys
    of a state (`fresh_decoding_rows`) and keep the rest, which nesting would hide."""
    return {f"{i}/{key}": value for i, state in enumerate(states) for key, value in state.items()}


def _split(state: DecodingState, count: int) -> list[DecodingState]:
    """`_prefixed`'s inverse."""
    states: list[DecodingState] = [{} for _ in range(count)]
    for name, value in state.items():
        member, key = name.split("/", 1)
        states[int(member)][key] = value
    return states
