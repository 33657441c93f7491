"""A tiny random Marian model in the OPUS-MT layout, and what Hugging Face does with it.

`build_random_marian` writes a directory like the one `huggingface-cli download
Helsinki-NLP/opus-mt-en-de` leaves; `record_outputs` runs transformers on it, for the
tests of `t2t-importer --from=marian` to compare with, without PyTorch. Run, this
rebuilds tests/fixtures/marian/ (needs torch, transformers, sentencepiece and
../shared/data); imported, it needs none of them.
"""

from __future__ import annotations

import io
import json
import math
import re
import shutil
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MULTI30K = ROOT.parent / "shared" / "data" / "multi30k"
FIXTURE = ROOT / "tests" / "fixtures" / "marian"
TRAIN_LINES = 3000
TEST_LINES = 160
SPM_VOCAB_SIZE = 150
# In vocab.json only (never in target_vocab.json), as in multilingual OPUS-MT models.
LANGUAGE_TAGS = (">>deu<<", ">>fra<<")
# Frequent source pieces left out of vocab.json: OPUS-MT vocabularies, built from
# the segmented corpus, can lack pieces the .spm model emits; these become <unk>.
OMITTED_PIECES = 2
D_MODEL, HEADS, FFN, LAYERS = 16, 4, 32, 2
MAX_LENGTH, NUM_BEAMS = 64, 4
TEACHER_FORCED_PAIRS = 4
# Standard deviations of the random weights (layer-norm weights around 1).
EMBEDDING_STD, BIAS_STD, LAYER_NORM_STD, FINAL_BIAS_STD, WEIGHT_GAIN = 0.3, 0.2, 0.2, 0.5, 1.0
# </s> gains EOS_SLOPE logits a position, zero at EOS_POSITION (see _end_sentences).
EOS_SLOPE, EOS_POSITION = 0.15, 15
MODEL_FILES = ("config.json", "generation_config.json", "model.safetensors", "source.spm")
MODEL_FILES += ("target.spm", "vocab.json", "target_vocab.json", "tokenizer_config.json")


def _multi30k(name: str, count: int) -> list[str]:
    """The first count lines of ../shared/data/multi30k/name."""
    with open(MULTI30K / name, encoding="utf-8") as file:
        return file.read().split("\n")[:count]


def _train_spm(lines: list[str], normalization: str) -> bytes:
    """A unigram SentencePiece model of lines, trained in memory."""
    import sentencepiece

    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=model,
        model_type="unigram",
        vocab_size=SPM_VOCAB_SIZE,
        character_coverage=0.9995,
        normalization_rule_name=normalization,
        num_threads=1,
        minloglevel=2,
    )
    return model.getvalue()


def _piece_counts(model: bytes, lines: list[str]) -> Counter[str]:
    """How often each ordinary piece of model occurs in lines segmented by it (0: never)."""
    import sentencepiece

    processor = sentencepiece.SentencePieceProcessor(model_proto=model)
    counts: Counter[str] = Counter()
    for i in range(processor.get_piece_size()):
        if not (processor.is_control(i) or processor.is_unknown(i) or processor.is_unused(i)):
            counts[processor.id_to_piece(i)] = 0
    for pieces in processor.encode(lines, out_type=str):
        counts.update(piece for piece in pieces if piece in counts)
    return counts


def _by_frequency(counts: Counter[str], leave_out: list[str] | None = None) -> list[str]:
    """Pieces, most frequent first as marian-vocab orders them, ties by piece."""
    pieces = sorted(counts, key=lambda piece: (-counts[piece], piece))
    return [piece for piece in pieces if piece not in (leave_out or [])]


def _vocabularies(
    source: Counter[str], target: Counter[str], joint: bool
) -> tuple[dict[str, int], dict[str, int] | None]:
    """vocab.json and, for separate vocabularies, target_vocab.json, as OPUS-MT's:
    </s> 0, <unk> 1, pieces by frequency, language tags (source side), <pad> last."""
    source_only = [piece for piece in _by_frequency(source) if piece not in target]
    omitted = [piece for piece in source_only if len(piece) >= 4][:OMITTED_PIECES]
    if joint:  # Keeps the pieces of count 0, which Counter's + drops.
        source = Counter({piece: source[piece] + target[piece] for piece in {**source, **target}})
    source_list = ["</s>", "<unk>", *_by_frequency(source, omitted), *LANGUAGE_TAGS, "<pad>"]
    vocab = {piece: i for i, piece in enumerate(source_list)}
    if joint:
        return vocab, None
    target_list = ["</s>", "<unk>", *_by_frequency(target), "<pad>"]
    if len(target_list) != len(source_list):  # Marian and transformers need one size.
        raise ValueError(f"vocabulary sizes {len(source_list)} and {len(target_list)} differ")
    return vocab, {piece: i for i, piece in enumerate(target_list)}


def _write_tokenizer(directory: Path, joint: bool, source_normalization: str) -> Any:
    """Trains and writes source.spm and target.spm, writes the vocabularies and
    tokenizer_config.json (by MarianTokenizer.save_pretrained); returns the tokenizer."""
    from transformers import MarianTokenizer

    english, german = _multi30k("train.en", TRAIN_LINES), _multi30k("train.de", TRAIN_LINES)
    source, target = _train_spm(english, source_normalization), _train_spm(german, "identity")
    (directory / "source.spm").write_bytes(source)
    (directory / "target.spm").write_bytes(target)
    counts = _piece_counts(source, english), _piece_counts(target, german)
    vocab, target_vocab = _vocabularies(*counts, joint)
    paths = {"vocab": str(directory / "vocab.json")}
    if target_vocab:
        paths["target_vocab_file"] = str(directory / "target_vocab.json")
    for path, contents in zip(paths.values(), (vocab, target_vocab), strict=False):
        Path(path).write_text(json.dumps(contents, ensure_ascii=False), encoding="utf-8")
    spm = {f"{side}_spm": str(directory / f"{side}.spm") for side in ("source", "target")}
    tokenizer = MarianTokenizer(
        **spm, **paths, source_lang="en", target_lang="de", separate_vocabs=not joint
    )
    tokenizer.save_pretrained(str(directory))
    return tokenizer


def _marian_config(vocab_size: int, joint: bool) -> Any:
    """The MarianConfig of the tiny model, OPUS-MT's settings at a small size."""
    from transformers import MarianConfig

    pad = vocab_size - 1
    config = dict(d_model=D_MODEL, encoder_layers=LAYERS, decoder_layers=LAYERS)
    config |= dict(encoder_attention_heads=HEADS, decoder_attention_heads=HEADS)
    config |= dict(encoder_ffn_dim=FFN, decoder_ffn_dim=FFN, max_position_embeddings=128)
    config |= dict(vocab_size=vocab_size, decoder_vocab_size=vocab_size)
    config |= dict(pad_token_id=pad, decoder_start_token_id=pad, eos_token_id=0, bos_token_id=0)
    config |= dict(forced_eos_token_id=0, share_encoder_decoder_embeddings=joint)
    config |= dict(activation_function="swish", scale_embedding=True)
    # As in OPUS-MT's config.json files; transformers' Marian has no other choice.
    config |= dict(normalize_before=False, normalize_embedding=False, add_bias_logits=False)
    config |= dict(static_position_embeddings=True, add_final_layer_norm=False)
    return MarianConfig(**config, architectures=["MarianMTModel"])


def _generation_settings(pad: int) -> dict[str, Any]:
    """generation_config.json's settings (older OPUS-MT config.json files repeat them)."""
    settings = dict(bad_words_ids=[[pad]], bos_token_id=0, decoder_start_token_id=pad)
    settings |= dict(eos_token_id=0, forced_eos_token_id=0, pad_token_id=pad)
    return settings | dict(max_length=MAX_LENGTH, num_beams=NUM_BEAMS)


def _randomize(model: Any, seed: int) -> None:
    """Draws every weight, bias, layer norm and final_logits_bias from a seeded generator;
    leaves the sinusoidal positions, which are not saved."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "embed_positions" in name:
                continue
            noise = torch.randn(parameter.shape, generator=generator)
            if "layer_norm.weight" in name:
                value = 1.0 + LAYER_NORM_STD * noise
            elif name.endswith(".bias"):
                value = BIAS_STD * noise
            elif name.endswith(("shared.weight", "embed_tokens.weight")):
                value = EMBEDDING_STD * noise
            else:
                value = WEIGHT_GAIN / math.sqrt(parameter.shape[1]) * noise
            parameter.copy_(value)
        bias = model.final_logits_bias
        bias.copy_(FINAL_BIAS_STD * torch.randn(bias.shape, generator=generator))


def _greedy_states(model: Any, source: list[int]) -> Any:
    """The decoder's last hidden states along MAX_LENGTH greedy steps that never end."""
    import torch

    end, pad = model.config.eos_token_id, model.config.pad_token_id
    inputs, decoded = torch.tensor([source]), torch.tensor([[model.config.decoder_start_token_id]])
    while decoded.shape[1] < MAX_LENGTH:
        logits = model(input_ids=inputs, decoder_input_ids=decoded).logits[0, -1]
        logits[[end, pad]] = -math.inf
        decoded = torch.cat([decoded, logits.argmax().reshape(1, 1)], dim=1)
    return model.model(input_ids=inputs, decoder_input_ids=decoded).last_hidden_state[0]


def _end_sentences(model: Any, sources: list[list[int]], rounds: int = 3) -> None:
    """Makes </s> likelier with each position, as a random model otherwise repeats one
    token up to max_length: adds to its output embedding the direction in which the
    decoder's last hidden state moves with the position (on greedy outputs of
    sources), scaled to EOS_SLOPE logits a position, and offsets its final_logits_bias
    so that the gain is zero at position EOS_POSITION. Refitted for some rounds, as
    the embedding of </s> also feeds the encoder."""
    import torch

    end = model.config.eos_token_id
    embedding = model.get_output_embeddings().weight
    original = embedding[end].detach().clone(), float(model.final_logits_bias[0, end])
    positions = torch.arange(MAX_LENGTH, dtype=torch.float32).repeat(len(sources))
    centred = positions - positions.mean()
    direction = None
    with torch.no_grad():
        for _ in range(rounds):
            states = torch.cat([_greedy_states(model, source) for source in sources])
            if direction is None:
                direction = ((states - states.mean(0)) * centred[:, None]).sum(0)
                direction /= direction.norm()
            projection = states @ direction
            slope = float((projection - projection.mean()) @ centred / (centred @ centred))
            intercept = float(projection.mean()) - slope * float(positions.mean())
            scale = EOS_SLOPE / slope
            embedding[end] = original[0] + scale * direction
            model.final_logits_bias[0, end] = original[1] - scale * (
                slope * EOS_POSITION + intercept
            )


def build_random_marian(
    directory: Path, seed: int = 0, joint_vocab: bool = True, source_normalization: str = "nmt_nfkc"
) -> None:
    """Writes a tiny random Marian model in the OPUS-MT layout into directory.

    SentencePiece models trained on the first TRAIN_LINES lines of Multi30k's English
    (source.spm, normalization source_normalization: nmt_nfkc as OPUS-MT's, or
    identity, much smaller) and German (target.spm, identity); weights drawn with seed.
    With joint_vocab=False, two vocabularies of one size and separate embeddings.
    """
    import torch
    from transformers import GenerationConfig, MarianMTModel

    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = _write_tokenizer(directory, joint_vocab, source_normalization)
    vocab_size = tokenizer.vocab_size
    torch.manual_seed(seed)
    model = MarianMTModel(_marian_config(vocab_size, joint_vocab)).eval()
    _randomize(model, seed)
    _end_sentences(model, [tokenizer(line).input_ids for line in _multi30k("train.en", 4)])
    settings = _generation_settings(vocab_size - 1)
    model.generation_config = GenerationConfig(**settings)
    # Float16: the importer must read half-precision checkpoints too (in float32).
    model.to(torch.float16).save_pretrained(str(directory), safe_serialization=True)
    config_path = directory / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8")) | settings
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    for path in directory.iterdir():
        if path.name not in MODEL_FILES:
            shutil.rmtree(path) if path.is_dir() else path.unlink()


def _generation_lines(lines: list[str], count: int = 8) -> list[str]:
    """About ten sentences to translate: count of lines (not hostile ones) spread over
    their lengths, the first again with a language tag in front, an empty one and one
    with letters source.spm lacks."""
    plain = [line for line in lines if line.strip() and line not in hostile_lines()]
    by_length = {len(line.split()): line for line in plain}
    chosen = [by_length[n] for n in sorted(by_length)]
    chosen = chosen[:: max(1, len(chosen) // count)][:count]
    return [*chosen, f"{LANGUAGE_TAGS[0]} {chosen[0]}", "", "Zwei Männer über der Straße."]


def _teacher_forced(model: Any, tokenizer: Any, pairs: list[tuple[str, str]]) -> list[dict]:
    """Inputs, labels, HF's shifted-right decoder inputs and logits of (source, target)s."""
    import torch

    recorded = []
    for source, target in pairs:
        inputs, labels = tokenizer(source).input_ids, tokenizer(text_target=target).input_ids
        decoder_inputs = [model.config.decoder_start_token_id, *labels[:-1]]
        with torch.no_grad():
            logits = model(
                input_ids=torch.tensor([inputs]), decoder_input_ids=torch.tensor([decoder_inputs])
            ).logits[0]
        recorded.append(dict(source=source, target=target, inputs=inputs, labels=labels))
        recorded[-1] |= dict(decoder_inputs=decoder_inputs, logits=logits.float().tolist())
    return recorded


def _generate(model: Any, tokenizer: Any, lines: list[str], num_beams: int) -> dict[str, list]:
    """generate() on each line alone (no padding): ids, texts and, for beams, scores;
    for greedy search, the smallest gap between the best and second-best next token."""
    import torch

    beam = dict(length_penalty=1.0, early_stopping=True) if num_beams > 1 else {}
    result: dict[str, list] = {"lines": lines, "ids": [], "texts": []}
    result["sequences_scores" if beam else "min_top2_gaps"] = []
    for line in lines:
        with torch.no_grad():
            output = model.generate(
                input_ids=torch.tensor([tokenizer(line).input_ids]),
                num_beams=num_beams,
                do_sample=False,
                output_scores=True,
                return_dict_in_generate=True,
                **beam,
            )
        result["ids"].append(output.sequences[0].tolist())
        result["texts"] += tokenizer.batch_decode(output.sequences, skip_special_tokens=True)
        if beam:
            result["sequences_scores"].append(float(output.sequences_scores[0]))
        else:
            top = [step[0].topk(2).values for step in output.scores]
            gaps = [float(a - b) for a, b in top if math.isfinite(b)]
            result["min_top2_gaps"].append(min(gaps, default=None))
    return result


def record_outputs(
    directory: Path, lines: list[str], pairs: list[tuple[str, str]] | None = None
) -> dict[str, Any]:
    """What transformers does with the Marian model in directory, as a JSON-able dict.

    Tokenizer ids of every line as source and as target, and the target ids decoded
    again; logits under teacher forcing of the (source, target) pairs (by default
    each of the first TEACHER_FORCED_PAIRS lines with itself); greedy and beam search
    on about ten of the lines, one at a time, with the settings under "settings".
    """
    import sentencepiece
    import torch
    import transformers
    from transformers import MarianMTModel, MarianTokenizer

    tokenizer = MarianTokenizer.from_pretrained(str(directory))
    model = MarianMTModel.from_pretrained(str(directory), dtype=torch.float32).eval()
    config = model.generation_config
    target_ids = [tokenizer(text_target=line).input_ids for line in lines]
    settings = _generation_settings(config.pad_token_id) | dict(length_penalty=1.0)
    settings |= dict(early_stopping=True, batch_size=1, dtype="float32", skip_special_tokens=True)
    versions = dict(transformers=transformers.__version__, torch=torch.__version__)
    return {
        "versions": versions | dict(sentencepiece=sentencepiece.__version__),
        "settings": settings,
        "lines": lines,
        "source_ids": [tokenizer(line).input_ids for line in lines],
        "target_ids": target_ids,
        "target_ids_decoded": tokenizer.batch_decode(target_ids, skip_special_tokens=True),
        "teacher_forced": _teacher_forced(
            model, tokenizer, pairs or [(line, line) for line in lines[:TEACHER_FORCED_PAIRS]]
        ),
        "greedy": _generate(model, tokenizer, _generation_lines(lines), num_beams=1),
        "beam": _generate(model, tokenizer, _generation_lines(lines), num_beams=NUM_BEAMS),
    }


def hostile_lines() -> list[str]:
    """Lines that tokenizers get wrong: empty and white-space lines, emoji, CJK, NFD,
    control and zero-width characters, long words, tags and special tokens in the text."""
    accents = "Café naïve résumé, Zwei Männer über der Straße."
    words = ["a", "dog", "runs", "over", "green", "grass", "while", "two", "men", "watch"]
    return [
        *("", " ", "   ", "\t", "\tTabs\tbetween\twords\t", "  Two leading spaces."),
        *("Two trailing spaces.  ", "Many    spaces   between  words."),
        "A dog \U0001f415 runs \U0001f3c3\u200d\u2642\ufe0f fast \U0001f44d\U0001f3fd!",
        *("一只狗在草地上奔跑。", "日本語のテキストと한국어"),
        unicodedata.normalize("NFC", accents),
        unicodedata.normalize("NFD", accents),
        "Bell\x07, escape\x1b, delete\x7f and unit\x1fseparator.",
        "Zero\u200bwidth space, zero\u200cwidth non-joiner, zero\u200dwidth joiner.",
        "No\u00a0break space, soft\u00adhyphen, en\u2002space.",
        "Full-width \uff21\uff22\uff23\uff11\uff12\uff13 and ligature \ufb01ne \ufb02ower.",
        *("Donaudampfschifffahrtsgesellschaftskapitänsmützenabzeichen", "x" * 120),
        "1234567890 3.14159 1,000,000 2024-01-01 +49 (0)30 123456",
        "!!! ??? ... --- ((( ))) [[[ ]]] \"\" '' ,,, ;;; :: // \\\\ @@ ## %%",
        *(">>deu<< A man is walking.", ">>deu<<A man is walking.", "A man >>deu<< is walking."),
        *(">>xyz<< unknown tag", ">>fra<< >>deu<< two tags", ">>deu unclosed", ">><< empty"),
        *("<unk>", "</s>", "<pad>", "<s>", "A </s> B <unk> C <pad> D", "▁ underline ▁▁"),
        *("ALL CAPS SHOUTING AND MiXeD cAsE", "Ελληνικά, Русский текст, עברית, العربية"),
        " ".join(words[i % len(words)] for i in range(300)),
    ]


def _write_expected(directory: Path, name: str, recorded: dict[str, Any]) -> None:
    """recorded as directory/name.json, one list of numbers a line, but the teacher-
    forced logits as float32 arrays logits_<i> of directory/name_logits.npz."""
    import numpy

    arrays = {}
    for i, pair in enumerate(recorded["teacher_forced"]):
        arrays[f"logits_{i}"] = numpy.asarray(pair.pop("logits"), dtype=numpy.float32)
        pair["logits"] = f"{name}_logits.npz:logits_{i}"
    with open(directory / f"{name}_logits.npz", "wb") as file:
        numpy.savez_compressed(file, **arrays)
    text = json.dumps(recorded, ensure_ascii=False, indent=1)
    # Lists of numbers on one line; JSON strings hold no newline, so none is touched.
    text = re.sub(r"\[\n[-+.\deE,\s]*\]", lambda match: re.sub(r"\s", "", match[0]), text)
    (directory / f"{name}.json").write_text(text + "\n", encoding="utf-8")


README = """\
# A tiny random Marian model and what Hugging Face does with it

For the tests of `t2t-importer --from=marian`, which need no PyTorch. Made by
`.venv/bin/python tests/marian_reference.py` (see there; needs ../shared/data) with
transformers {transformers}, torch {torch} and sentencepiece {sentencepiece}.

- `model/`: a Marian directory in the OPUS-MT layout (of `huggingface-cli download
  Helsinki-NLP/opus-mt-en-de`): joint vocabulary, random float16 weights (seed 0);
  source.spm normalizes with nmt_nfkc, target.spm with identity; vocab.json has the
  tags `>>deu<<` and `>>fra<<` and lacks two pieces of source.spm.
- `model_separate_vocab/`: the same with vocab.json and target_vocab.json, and
  source.spm normalizing with identity.
- `expected.json`, `expected_separate_vocab.json`: what transformers does with them
  on {lines} and {separate_lines} lines (Multi30k test lines, then `hostile_lines()`):
  tokenizer ids as source and as target, teacher forcing (logits in `*_logits.npz`),
  greedy and beam search a sentence at a time, with the settings used.
"""


def main() -> None:
    """Rebuilds tests/fixtures/marian/: both models, what transformers does with them,
    and the README."""
    shutil.rmtree(FIXTURE, ignore_errors=True)
    english, german = (_multi30k(f"test_2016_flickr.{side}", TEST_LINES) for side in ("en", "de"))
    # Teacher forcing on the pairs with the shortest German, to keep the logits small.
    pairs = sorted(zip(english, german, strict=True), key=lambda pair: (len(pair[1]), pair))
    counts = {}
    for joint, suffix, test_lines, pair_count in (
        (True, "", TEST_LINES, 4),
        (False, "_separate_vocab", 20, 2),
    ):
        lines = english[:test_lines] + hostile_lines()
        directory, counts[joint] = FIXTURE / f"model{suffix}", len(lines)
        build_random_marian(directory, 0, joint, "nmt_nfkc" if joint else "identity")
        recorded = record_outputs(directory, lines, pairs[:pair_count])
        _write_expected(FIXTURE, f"expected{suffix}", recorded)
    readme = README.format(lines=counts[True], separate_lines=counts[False], **recorded["versions"])
    (FIXTURE / "README.md").write_text(readme, encoding="utf-8")


if __name__ == "__main__":
    main()
