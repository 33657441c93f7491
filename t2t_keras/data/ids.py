"""Reserved token ids, the same for every vocabulary."""

PAD_ID = 0  # Padding; also the decoder's start symbol (targets shifted right).
EOS_ID = 1  # End of sequence: every target ends with it.
UNK_ID = 2  # Out-of-vocabulary pieces.
