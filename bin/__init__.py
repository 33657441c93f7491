"""The t2t-* command-line programs, installed as `t2t_keras.bin`."""
