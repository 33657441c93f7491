"""A foreign checkpoint's tensors as NumPy arrays: safetensors without PyTorch,
a PyTorch pickle only the safe way (`weights_only`) and only with PyTorch."""

from __future__ import annotations

import numpy as np

from t2t_keras.importing.sentencepiece_ids import UnsupportedModel


def read_weights(path: str) -> dict[str, np.ndarray]:
    """Every tensor of a `.safetensors` or PyTorch `.bin` file, by name, as float32 arrays.

    Raises:
      UnsupportedModel: a file that cannot be read, or a `.bin` without PyTorch.
    """
    if path.endswith(".safetensors"):
        from safetensors import SafetensorError
        from safetensors.numpy import load_file

        try:
            tensors = load_file(path)
        except (SafetensorError, OSError, ValueError) as error:
            raise UnsupportedModel(f"{path} cannot be read as safetensors ({error}).") from None
        return {name: np.asarray(tensor, np.float32) for name, tensor in tensors.items()}
    return _read_pickle(path)


def _read_pickle(path: str) -> dict[str, np.ndarray]:
    try:
        import torch
    except ImportError:
        raise UnsupportedModel(
            f"{path} is a PyTorch pickle, which only PyTorch reads, and PyTorch is not "
            'installed. Convert it to safetensors where PyTorch is (`python -c "from '
            "transformers import MarianMTModel; MarianMTModel.from_pretrained('DIR')"
            ".save_pretrained('DIR')\"` writes model.safetensors), or install torch; "
            "then run t2t-importer again."
        ) from None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises several kinds for damaged or unsafe pickles.
        raise UnsupportedModel(
            f"{path} cannot be read as PyTorch weights with weights_only=True ({error}); "
            "a pickle is only read the safe way, which refuses code."
        ) from None
    return {name: tensor.float().numpy() for name, tensor in state.items()}
