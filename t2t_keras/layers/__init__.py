"""The Transformer's layers, Keras 3 style: one public layer per module."""

from t2t_keras.layers.attention import MultiHeadAttention, attention_core
from t2t_keras.layers.decoder_layer import DecoderLayer
from t2t_keras.layers.embedding import ScaledEmbedding
from t2t_keras.layers.encoder_layer import EncoderLayer
from t2t_keras.layers.feed_forward import FeedForward
from t2t_keras.layers.position import LearnedPositions, sinusoid

__all__ = [
    "DecoderLayer",
    "EncoderLayer",
    "FeedForward",
    "LearnedPositions",
    "MultiHeadAttention",
    "ScaledEmbedding",
    "attention_core",
    "sinusoid",
]
