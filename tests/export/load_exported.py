"""Translates with an exported SavedModel using TensorFlow alone; run as a script.

python load_exported.py SAVED_MODEL_DIR < inputs.json  ->  {"outputs": [...], "scores": [...]}

Importing t2t_keras is made to fail, so the SavedModel is shown to need
nothing from this project.
"""

from __future__ import annotations

import json
import sys


class _RefuseProject:
    """A meta path finder that fails every import of t2t_keras."""

    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> None:
        if name.split(".")[0] == "t2t_keras":
            raise ImportError(f"{name} must not be needed to serve an exported model")


def main() -> None:
    sys.meta_path.insert(0, _RefuseProject())
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  Registers the SentencePiece ops.

    inputs = json.load(sys.stdin)
    translate = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
    results = translate(inputs=tf.constant(inputs, tf.string))
    assert "t2t_keras" not in sys.modules
    print(
        json.dumps(
            {
                "outputs": [text.decode("utf-8") for text in results["outputs"].numpy()],
                "scores": results["scores"].numpy().tolist(),
            }
        )
    )


if __name__ == "__main__":
    main()
