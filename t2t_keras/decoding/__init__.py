"""Decoding: greedy and beam search over the cached Transformer decoder."""

from t2t_keras.decoding.decoder import Decoder, decode_limits
from t2t_keras.decoding.search import beam_search, greedy_search, length_penalty

__all__ = ["Decoder", "beam_search", "decode_limits", "greedy_search", "length_penalty"]
