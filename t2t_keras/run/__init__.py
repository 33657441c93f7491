"""A training directory: its run files, the model's weights in checkpoints, loading both.

Below decoding and training, which both read what t2t-trainer leaves behind.
"""
