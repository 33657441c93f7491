"""Speed measurements (t2t-benchmark): FLOP counts, and timed training, decoding and matmuls.

Above training and decoding, whose code it times; `flops` needs no TensorFlow.
"""
