"""What serves the search: the TensorFlow translator (text in, text out), file,
split and interactive decoding, and parse trees as decoded text."""
