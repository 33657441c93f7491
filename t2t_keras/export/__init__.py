"""Exports of a trained model and the runtime that decodes with one: the
SavedModel of TensorFlow Serving, and CTranslate2's model with its translator."""
