"""The t2t-* command-line programs, installed as `t2t_keras.bin`.

Importing them imports no TensorFlow: --help and flag errors answer at once.
"""
