"""Vocabularies: reserved ids, training limits, atomic writes, Python and graph paths agree."""

from __future__ import annotations

import itertools
import os
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest
import tensorflow as tf
from hypothesis import given
from hypothesis import strategies as st
from hypothesis_profiles import ci_budget

from t2t_keras.data.ids import EOS_ID, PAD_ID, UNK_ID
from t2t_keras.data.vocab import ByteVocabulary, SentencePieceVocabulary, Vocabulary

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
HELD_OUT = (
    "wmt/newstest2013.en",
    "wmt/newstest2013.de",
    "multi30k/val.en",
    "multi30k/val.de",
)
SMALL_CORPUS = [
    "A man in an orange hat starring at something.",
    "Two young guys with shaggy hair look at their hands.",
    "A little girl climbing into a wooden playhouse.",
    "Ein kleines Mädchen klettert in ein Spielhaus aus Holz.",
    "Zwei Männer stehen am Herd und bereiten Essen zu.",
] * 20


def _lines(relative_path: str, count: int | None = None) -> list[str]:
    return (DATA / relative_path).read_text(encoding="utf-8").splitlines()[:count]


def _is_normalized(sentence: str) -> bool:
    """True if SentencePiece's nmt_nfkc normalization leaves the sentence unchanged."""
    return (
        unicodedata.normalize("NFKC", sentence) == sentence
        and "  " not in sentence
        and sentence == sentence.strip()
    )


def _tf_round_trip(vocab: Vocabulary, texts: list[str]) -> tuple[list[list[int]], list[str]]:
    """Encodes and decodes texts in the graph; returns the ids and the decoded texts."""
    ids = vocab.tf_encode(tf.constant(texts, tf.string))
    decoded = vocab.tf_decode(ids.to_tensor(default_value=PAD_ID))
    return ids.to_list(), [text.decode("utf-8") for text in decoded.numpy()]


@pytest.fixture(scope="module")
def small_vocab(tmp_path_factory: pytest.TempPathFactory) -> SentencePieceVocabulary:
    path = tmp_path_factory.mktemp("vocab") / "small.model"
    return SentencePieceVocabulary.train(iter(SMALL_CORPUS), str(path), vocab_size=60)


@pytest.mark.parametrize("model_type", ["bpe", "unigram"])
def test_real_text_round_trips(model_type: str, tmp_path: Path) -> None:
    if not DATA.is_dir():
        pytest.skip(f"no shared data at {DATA}")
    train = _lines("multi30k/train.en", 2500) + _lines("multi30k/train.de", 2500)
    vocab = SentencePieceVocabulary.train(
        iter(train), str(tmp_path / "real.model"), vocab_size=2000, model_type=model_type
    )
    assert vocab.vocab_size == 2000
    held_out = [line for name in HELD_OUT for line in _lines(name)]
    normalized = [sentence for sentence in held_out if _is_normalized(sentence)]
    # Measured: 99.8% of these lines are their own normalized form.
    assert len(normalized) / len(held_out) > 0.9
    # Characters never seen in training become UNK (13-17% of newstest lines
    # for a Multi30k vocabulary); every other sentence comes back exactly.
    encoded = [vocab.encode(sentence) for sentence in normalized]
    covered = [s for s, ids in zip(normalized, encoded, strict=True) if UNK_ID not in ids]
    assert len(covered) / len(normalized) > 0.8
    assert [vocab.decode(vocab.encode(s)) for s in covered] == covered
    assert all(PAD_ID not in ids and EOS_ID not in ids for ids in encoded)
    tf_ids, tf_texts = _tf_round_trip(vocab, held_out)
    assert tf_ids == [vocab.encode(sentence) for sentence in held_out]
    assert tf_texts == [vocab.decode(ids) for ids in tf_ids]


def test_reserved_ids(small_vocab: SentencePieceVocabulary) -> None:
    pieces = small_vocab.tokenizer.id_to_string(tf.constant([PAD_ID, EOS_ID, UNK_ID]))
    assert pieces.numpy().tolist() == [b"<pad>", b"</s>", b"<unk>"]
    assert UNK_ID in small_vocab.encode("A snowman ☃.")  # ☃ is not in the corpus.
    assert all(i not in (PAD_ID, EOS_ID) for i in small_vocab.encode(" ".join(SMALL_CORPUS[:5])))


def test_decode_stops_at_eos_and_skips_pad(small_vocab: SentencePieceVocabulary) -> None:
    ids = small_vocab.encode("A little girl.")
    padded = [PAD_ID, *ids[:2], PAD_ID, *ids[2:], EOS_ID, *ids, PAD_ID]
    assert small_vocab.decode(padded) == "A little girl."
    starts_with_eos = [EOS_ID, *ids] + [PAD_ID] * (len(padded) - len(ids) - 1)
    decoded = small_vocab.tf_decode(tf.constant([padded, starts_with_eos]))
    assert decoded.numpy().tolist() == [b"A little girl.", b""]


def test_a_corpus_whose_first_million_lines_are_one_domain_yields_pieces_of_both(
    tmp_path: Path,
) -> None:
    english = ["the cat sat on the mat", "a dog runs in the park", "two men play football"]
    german = ["größe straße über äpfel", "schön müde grün böse", "weiß fuß maß spaß"]

    def corpus() -> Iterator[str]:
        yield from itertools.islice(itertools.cycle(english), 1_000_000)
        yield from itertools.islice(itertools.cycle(german), 1_000_000)

    path = tmp_path / "v.model"
    vocab = SentencePieceVocabulary.train(corpus(), str(path), 60)
    for sentence in english + german:
        # A vocabulary of the first million lines has no "ö" or "ß": they would be UNK.
        assert UNK_ID not in vocab.encode(sentence)
        assert vocab.decode(vocab.encode(sentence)) == sentence
    assert {"▁the", "aße"} <= set(vocab.pieces(range(vocab.vocab_size)))
    # The draw is seeded: the same corpus gives the same model.
    again = SentencePieceVocabulary.train(corpus(), str(tmp_path / "again.model"), 60)
    assert (tmp_path / "again.model").read_bytes() == path.read_bytes()
    assert again.vocab_size == vocab.vocab_size


def test_train_writes_atomically(tmp_path: Path) -> None:
    path = tmp_path / "v.model"
    vocab = SentencePieceVocabulary.train(iter(SMALL_CORPUS), str(path), 60)
    assert os.listdir(tmp_path) == ["v.model"]
    assert vocab.model_path == str(path)
    assert SentencePieceVocabulary.load(str(path)).encode("A man.") == vocab.encode("A man.")
    for empty in ([], ["", "  "]):
        with pytest.raises(ValueError, match="No sentences to train the vocabulary on"):
            SentencePieceVocabulary.train(iter(empty), str(tmp_path / "empty.model"), 60)
    assert os.listdir(tmp_path) == ["v.model"]


@pytest.mark.parametrize("model_type", ["bpe", "unigram"])
def test_small_corpus_caps_the_vocab_size(model_type: str, tmp_path: Path) -> None:
    vocab = SentencePieceVocabulary.train(
        iter(SMALL_CORPUS), str(tmp_path / "v.model"), 5000, model_type=model_type
    )
    assert 40 < vocab.vocab_size < 5000
    assert vocab.decode(vocab.encode(SMALL_CORPUS[3])) == SMALL_CORPUS[3]


def test_graph_ops_in_tf_data_and_tf_function(small_vocab: SentencePieceVocabulary) -> None:
    texts = SMALL_CORPUS[:4]
    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(2).map(small_vocab.tf_encode)
    ids = [row for batch in dataset for row in batch.to_list()]
    assert ids == [small_vocab.encode(text) for text in texts]

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def round_trip(batch: tf.Tensor) -> tf.Tensor:
        return small_vocab.tf_decode(small_vocab.tf_encode(batch).to_tensor())

    assert round_trip(tf.constant(texts)).numpy().tolist() == [t.encode() for t in texts]


def test_graph_ops_in_a_saved_model(small_vocab: SentencePieceVocabulary, tmp_path: Path) -> None:
    module = tf.Module()
    module.vocab = small_vocab  # Tracks the tokenizer's resource; saving fails without it.
    module.round_trip = tf.function(
        lambda batch: small_vocab.tf_decode(small_vocab.tf_encode(batch).to_tensor()),
        input_signature=[tf.TensorSpec([None], tf.string)],
    )
    tf.saved_model.save(module, str(tmp_path / "saved"))
    restored = tf.saved_model.load(str(tmp_path / "saved"))
    assert restored.round_trip(tf.constant(SMALL_CORPUS[:2])).numpy().tolist() == [
        text.encode() for text in SMALL_CORPUS[:2]
    ]


@ci_budget(50, deadline=None)
@given(st.lists(st.text(), min_size=1, max_size=4))
def test_byte_vocabulary_round_trips_any_text(texts: list[str]) -> None:
    vocab = ByteVocabulary()
    encoded = [vocab.encode(text) for text in texts]
    assert all(3 <= i < vocab.vocab_size for ids in encoded for i in ids)
    assert [vocab.decode(ids) for ids in encoded] == texts
    assert _tf_round_trip(vocab, texts) == (encoded, texts)


@ci_budget(30, deadline=None)
@given(st.lists(st.binary(), min_size=1, max_size=4))
def test_byte_vocabulary_decodes_invalid_utf8_like_python(rows: list[bytes]) -> None:
    vocab = ByteVocabulary()
    ids = tf.ragged.constant([[byte + 3 for byte in row] for row in rows], tf.int32, ragged_rank=1)
    decoded = vocab.tf_decode(ids).numpy().tolist()
    assert [text.decode("utf-8") for text in decoded] == [
        row.decode("utf-8", errors="replace") for row in rows
    ]


def test_byte_vocabulary_ids() -> None:
    vocab = ByteVocabulary()
    assert vocab.vocab_size == 259
    assert vocab.encode("aé") == [ord("a") + 3, 0xC3 + 3, 0xA9 + 3]
    assert vocab.decode([ord("a") + 3, PAD_ID, UNK_ID, ord("b") + 3, EOS_ID, ord("c") + 3]) == "ab"


def test_load_missing_model_names_the_path(tmp_path: Path) -> None:
    path = str(tmp_path / "missing.model")
    with pytest.raises(FileNotFoundError, match="missing.model"):
        SentencePieceVocabulary.load(path)


def test_bad_training_options_raise_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="bpe, unigram"):
        SentencePieceVocabulary.train(iter(SMALL_CORPUS), str(tmp_path / "v.model"), 60, "word")
    with pytest.raises(ValueError, match="smaller than required_chars"):
        SentencePieceVocabulary.train(iter(SMALL_CORPUS), str(tmp_path / "v.model"), 8)
    assert not (tmp_path / "v.model").exists()


def test_pieces_label_every_id(small_vocab: SentencePieceVocabulary) -> None:
    ids = small_vocab.encode("A little girl.")
    pieces = small_vocab.pieces([*ids, EOS_ID, PAD_ID, UNK_ID, small_vocab.vocab_size])
    assert pieces[len(ids) :] == ["</s>", "<pad>", "<unk>", f"<id {small_vocab.vocab_size}>"]
    # The pieces are the subwords themselves: joined, with "▁" as the space, the text.
    assert "".join(pieces[: len(ids)]).replace("\u2581", " ").strip() == "A little girl."


def test_byte_pieces() -> None:
    vocab = ByteVocabulary()
    ids = [*vocab.encode("a é\n"), EOS_ID]
    assert vocab.pieces(ids) == ["a", "\u2581", "<0xC3>", "<0xA9>", "<0x0A>", "</s>"]
