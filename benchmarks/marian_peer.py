r"""A Marian directory decoded as its users decode it: Hugging Face's generate, and
CTranslate2 on the model its own converter wrote (`ct2-transformers-converter`).

    python benchmarks/marian_peer.py generate MARIAN_DIR SOURCE OUTPUT [--batch=32]
    python benchmarks/marian_peer.py convert MARIAN_DIR CT2_DIR
    python benchmarks/marian_peer.py ctranslate2 CT2_DIR MARIAN_DIR SOURCE OUTPUT

No TensorFlow, no t2t_keras. `generate`: MarianTokenizer and MarianMTModel
from the directory, float32, batches of --batch sentences sorted longest
first, `generate()` with the directory's generation_config.json (its beam,
length penalty and max_length), `batch_decode(skip_special_tokens=True)`.
`ctranslate2`: the careful loop of `ctranslate2_peer.py` (longest first, chunks
of 64), tokenized with the directory's source.spm as MarianTokenizer does
(pieces, then `</s>`), the beam, length penalty and max_length of its
generation_config.json, detokenized with target.spm. Each prints t2t-decoder's
"Decoded N/N sentences (R sentences/s)", timed from the first line's
tokens to the last line's text.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

CHUNK = 64


def _lines(source: str) -> list[str]:
    return Path(source).read_text(encoding="utf-8").splitlines()


def _write(path: str, texts: list[str], seconds: float) -> None:
    Path(path).write_text("".join(f"{text}\n" for text in texts), encoding="utf-8")
    count = len(texts)
    rate = count / seconds
    print(f"Decoded {count}/{count} sentences ({rate:.1f} sentences/s)", file=sys.stderr)


def _by_length(
    lines: list[str], size: int, translate: Callable[[list[str]], list[str]]
) -> list[str]:
    """translate over chunks of `size` lines, longest first; the texts in the lines' order."""
    order = sorted(range(len(lines)), key=lambda i: -len(lines[i]))
    texts = [""] * len(lines)
    for start in range(0, len(order), size):
        chunk = order[start : start + size]
        for index, text in zip(chunk, translate([lines[i] for i in chunk]), strict=True):
            texts[index] = text
    return texts


def generate(marian_dir: str, source: str, output: str, batch: int) -> None:
    import torch
    from transformers import MarianMTModel, MarianTokenizer

    torch.set_num_threads(len(os.sched_getaffinity(0)))
    tokenizer = MarianTokenizer.from_pretrained(marian_dir)
    model = MarianMTModel.from_pretrained(marian_dir, dtype=torch.float32).eval()
    lines = _lines(source)

    def translate(chunk: list[str]) -> list[str]:
        encoded = tokenizer(chunk, return_tensors="pt", padding=True)
        with torch.inference_mode():
            ids = model.generate(**encoded)
        return tokenizer.batch_decode(ids, skip_special_tokens=True)

    started = time.perf_counter()
    texts = _by_length(lines, batch, translate)
    _write(output, texts, time.perf_counter() - started)


def convert(marian_dir: str, ct2_dir: str) -> None:
    from ctranslate2.converters import TransformersConverter

    TransformersConverter(marian_dir).convert(ct2_dir, force=True)
    print(ct2_dir)


def ctranslate2_loop(ct2_dir: str, marian_dir: str, source: str, output: str) -> None:
    import ctranslate2
    import sentencepiece

    settings = json.loads(Path(marian_dir, "generation_config.json").read_text(encoding="utf-8"))
    pieces = sentencepiece.SentencePieceProcessor(model_file=f"{marian_dir}/source.spm")
    target = sentencepiece.SentencePieceProcessor(model_file=f"{marian_dir}/target.spm")
    cores = len(os.sched_getaffinity(0))
    translator = ctranslate2.Translator(ct2_dir, device="cpu", intra_threads=cores)

    def translate(chunk: list[str]) -> list[str]:
        tokens = [[*pieces.encode(line, out_type=str), "</s>"] for line in chunk]
        results = translator.translate_batch(
            tokens,
            beam_size=settings.get("num_beams", 4),
            length_penalty=settings.get("length_penalty", 1.0),
            max_decoding_length=settings.get("max_length", 512) - 1,
        )
        return [target.decode_pieces(result.hypotheses[0]) for result in results]

    lines = _lines(source)
    started = time.perf_counter()
    texts = _by_length(lines, CHUNK, translate)
    _write(output, texts, time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    hf = commands.add_parser("generate")
    hf.add_argument("marian_dir")
    hf.add_argument("source")
    hf.add_argument("output")
    hf.add_argument("--batch", type=int, default=32)
    converter = commands.add_parser("convert")
    converter.add_argument("marian_dir")
    converter.add_argument("ct2_dir")
    loop = commands.add_parser("ctranslate2")
    for name in ("ct2_dir", "marian_dir", "source", "output"):
        loop.add_argument(name)
    args = parser.parse_args()
    if args.command == "generate":
        generate(args.marian_dir, args.source, args.output, args.batch)
    elif args.command == "convert":
        convert(args.marian_dir, args.ct2_dir)
    else:
        ctranslate2_loop(args.ct2_dir, args.marian_dir, args.source, args.output)


if __name__ == "__main__":
    main()
