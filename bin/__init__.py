"""The t2t-* command-line programs, installed as `t2t_keras.bin`."""

import os

# TensorFlow's C++ start-up chatter (CUDA probing, CPU features) would bury
# the programs' own output; set TF_CPP_MIN_LOG_LEVEL yourself to see it.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
