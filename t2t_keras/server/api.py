"""The server's JSON: what a request must hold, and the replies, with no HTTP in sight.

Two forms of the same call:
- ours, `POST /v1/translate` `{"inputs": ["...", ...]}` ->
  `{"outputs": [...], "scores": [...], "truncated": [indices]}`;
- TensorFlow Serving's REST predict, so its clients work unchanged:
  `{"instances": [...]}` (the row form) -> `{"predictions": [{"outputs": ..,
  "scores": ..}, ...]}`, and `{"inputs": [...]}` (the columnar form) ->
  `{"outputs": {"outputs": [...], "scores": [...]}}`.
An output is a string, or a list of strings when the server returns several
hypotheses an input (beams, samples); a score likewise. Every refusal is an
`ApiError`: an HTTP status and one sentence saying what was wrong and what
is accepted.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from t2t_keras.search.settings import MAX_SEED
from t2t_keras.serving.engine import Reply

SIGNATURE = "serving_default"


class ApiError(Exception):
    """A request refused: its HTTP status and the sentence the client reads."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one request may hold."""

    max_request_sentences: int = 1000
    max_request_bytes: int = 1 << 20


def read_json(body: bytes, limits: Limits) -> dict[str, Any]:
    """The body as a JSON object.

    Raises:
      ApiError: 413 over max_request_bytes; 400 not UTF-8, not JSON, not an object.
    """
    if len(body) > limits.max_request_bytes:
        raise ApiError(
            413,
            f"The body holds {len(body)} bytes; at most {limits.max_request_bytes} are "
            "accepted: send fewer inputs a request.",
        )
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ApiError(
            400, f"The body is not UTF-8 (byte {error.start}); send JSON encoded as UTF-8."
        ) from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ApiError(
            400, f"The body is not JSON ({error.msg} at line {error.lineno}, column "
            f'{error.colno}); send an object such as {{"inputs": ["a sentence"]}}.',
        ) from None  # fmt: skip
    if not isinstance(value, dict):
        raise ApiError(400, 'The body must be a JSON object such as {"inputs": ["a sentence"]}.')
    return value


def translate_inputs(body: dict[str, Any], limits: Limits) -> list[str]:
    """The texts of `POST /v1/translate`'s {"inputs": [...]}."""
    if "inputs" not in body:
        raise ApiError(400, 'The object has no "inputs"; send {"inputs": ["a sentence", ...]}.')
    return _texts(body["inputs"], '"inputs"', limits)


def request_seed(body: dict[str, Any], seeded: bool) -> int | None:
    """The request's sampling seed, {"seed": N}, or None for the server's."""
    if "seed" not in body:
        return None
    if not seeded:
        raise ApiError(
            400, 'A "seed" applies to a server that samples with --runtime=tensorflow '
            "(--decode_hparams=sampling=true); drop it.",
        )  # fmt: skip
    seed = body["seed"]
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= MAX_SEED:
        raise ApiError(400, f'"seed" must be an integer from 0 to {MAX_SEED}, not {seed!r}.')
    return seed


def predict_inputs(body: dict[str, Any], limits: Limits) -> tuple[list[str], bool]:
    """The texts of a TensorFlow Serving predict request, and whether it is the row form.

    Rows are strings or objects {"inputs": "..."}; the columnar form's
    "inputs" is a list of strings, or an object {"inputs": [...]}.
    """
    signature = body.get("signature_name", SIGNATURE)
    if signature != SIGNATURE:
        raise ApiError(400, f'No signature "{signature}"; the model has "{SIGNATURE}".')
    if ("instances" in body) == ("inputs" in body):
        raise ApiError(
            400, 'Give either "instances" (the row form) or "inputs" (the columnar form), '
            'not both or neither: {"instances": ["a sentence", ...]}.',
        )  # fmt: skip
    if "instances" in body:
        rows = body["instances"]
        if isinstance(rows, list):
            rows = [row.get("inputs") if isinstance(row, dict) else row for row in rows]
        return _texts(rows, '"instances"', limits), True
    columns = body["inputs"]
    if isinstance(columns, dict):
        columns = columns.get("inputs")
    return _texts(columns, '"inputs"', limits), False


def _texts(value: Any, name: str, limits: Limits) -> list[str]:
    if not isinstance(value, list):
        raise ApiError(400, f"{name} must be a list of strings, not {_kind(value)}.")
    if not value:
        raise ApiError(400, f"{name} is empty; send at least one string.")
    if len(value) > limits.max_request_sentences:
        raise ApiError(
            413,
            f"{name} holds {len(value)} inputs; at most {limits.max_request_sentences} are "
            "accepted a request: split it.",
        )
    for index, text in enumerate(value):
        if not isinstance(text, str):
            raise ApiError(400, f"{name}[{index}] is {_kind(text)}; every input must be a string.")
    return value


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    return names.get(type(value), "a number")


def _column(values: list[list[Any]], several: bool, missing: Any) -> list[Any]:
    """One entry an input: its list of hypotheses' values, or its best one alone."""
    if several:
        return values
    return [entry[0] if entry else missing for entry in values]


def _finite(scores: list[list[float]]) -> list[list[float | None]]:
    """-inf (no hypothesis ended) as null: JSON has no infinity."""
    return [[score if math.isfinite(score) else None for score in entry] for entry in scores]


def translate_reply(reply: Reply, several: bool) -> dict[str, Any]:
    """`POST /v1/translate`'s answer."""
    answer = {
        "outputs": _column(reply.outputs, several, ""),
        "scores": _column(_finite(reply.scores), several, None),
    }
    if reply.truncated:
        answer["truncated"] = reply.truncated
    return answer


def predict_reply(reply: Reply, several: bool, rows: bool) -> dict[str, Any]:
    """TensorFlow Serving's answer: `predictions` for the row form, else `outputs`."""
    outputs = _column(reply.outputs, several, "")
    scores = _column(_finite(reply.scores), several, None)
    if rows:
        return {
            "predictions": [
                {"outputs": output, "scores": score}
                for output, score in zip(outputs, scores, strict=True)
            ]
        }
    return {"outputs": {"outputs": outputs, "scores": scores}}


def model_status(version: int, state: str = "AVAILABLE") -> dict[str, Any]:
    """`GET /v1/models/NAME`: TensorFlow Serving's status of the one version served."""
    return {
        "model_version_status": [
            {
                "version": str(version),
                "state": state,
                "status": {"error_code": "OK", "error_message": ""},
            }
        ]
    }


def model_metadata(name: str, version: int, several: bool) -> dict[str, Any]:
    """`GET /v1/models/NAME/metadata`: the signature, inputs strings to outputs and scores."""

    def tensor(dtype: str, dims: int) -> dict[str, Any]:
        shape = [{"size": "-1", "name": ""} for _ in range(dims)]
        return {"dtype": dtype, "tensor_shape": {"dim": shape, "unknown_rank": False}}

    dims = 2 if several else 1
    signature = {
        "inputs": {"inputs": {"name": "inputs", **tensor("DT_STRING", 1)}},
        "outputs": {
            "outputs": {"name": "outputs", **tensor("DT_STRING", dims)},
            "scores": {"name": "scores", **tensor("DT_FLOAT", dims)},
        },
        "method_name": "tensorflow/serving/predict",
    }
    return {
        "model_spec": {"name": name, "signature_name": "", "version": str(version)},
        "metadata": {"signature_def": {"signature_def": {SIGNATURE: signature}}},
    }
