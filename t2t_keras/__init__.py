"""t2t_keras: the Transformer of "Attention Is All You Need" on TensorFlow 2 / Keras 3."""

__version__ = "0.1.0"
