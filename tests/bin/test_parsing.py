"""Parsing end to end, in-process: t2t-trainer generates a one-tree-a-line treebank, trains
briefly and scores dev trees by EVALB's rules; t2t-decoder writes PTB trees over exactly the
input's words (brackets escaped, empty lines kept) and prints EVALB's summary."""

from __future__ import annotations

import concurrent.futures
import itertools
from pathlib import Path

import pytest
from binaries import assert_user_error, run_in_process

from t2t_keras.data import trees

TEMPLATES = [
    "(TOP (S (NP (DT The) (NN {0})) (VP (VBD {1}) (PP (IN on) (NP (DT the) (NN {2})))) (. .)))",
    "(TOP (S (NP (NNP Mr.) (NNP {0})) (VP (VBD {1}) (NP (DT a) (NN {2}))) (. .)))",
    "(TOP (S (`` ``) (NP (PRP He)) (VP (VBD {1}) (PRT (RP up))) (, ,) ('' '') (NP (NN {2})) (. .)))",
]
NOUNS, VERBS = ["cat", "dog", "mat", "market"], ["sat", "fell", "rose"]
GOLD = [
    template.format(first, verb, second)
    for template, first, verb, second in itertools.product(TEMPLATES, NOUNS, VERBS, NOUNS)
]


@pytest.fixture(scope="module")
def parsing_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A root with tmp/ (the treebank), data/ and train/ (transformer_tiny, 4 steps,
    reading the next word's encoding as transformer_parsing_small does)."""
    root = tmp_path_factory.mktemp("parsing")
    (root / "tmp").mkdir()
    for split, lines in (("train", GOLD[:120]), ("dev", GOLD[120:132]), ("test", GOLD[132:])):
        (root / "tmp" / f"{split}.trees").write_text("\n".join(lines) + "\n")
    result = run_in_process(
        "t2t-trainer",
        "--problem=parsing_english_wsj16k",
        "--hparams_set=transformer_tiny",
        "--hparams=extra_length=12,shared_embeddings=false,leaf_words=true",
        "--generate_data",
        f"--tmp_dir={root / 'tmp'}",
        f"--data_dir={root / 'data'}",
        f"--output_dir={root / 'train'}",
        "--train_steps=4",
        "--eval_every_steps=4",
        "--eval_steps=1",
        "--eval_bleu_examples=3",
        "--xla=off",
        "--random_seed=1",
        "--distribution_strategy=one_device",  # Mirroring has tests of its own.
    )
    assert result.returncode == 0, result.stderr
    assert "bracket_f1" in result.stderr and "output trees" in result.stderr
    return root


def test_decoding_a_file_writes_one_tree_per_line_and_scores_as_evalb(
    parsing_run: Path, tmp_path: Path
) -> None:
    sources = ["The cat sat on the mat .", "", "He ( quietly ) rose up , '' market .", "f(x)"]
    gold = [GOLD[0], "", GOLD[-1].replace("(VBD rose)", "(VBD rose) (-LRB- -LRB-)"), "(X (NN a))"]
    (tmp_path / "in.txt").write_text("\n".join(sources) + "\n")
    (tmp_path / "gold.trees").write_text("\n".join(gold) + "\n")
    result = run_in_process(
        "t2t-decoder",
        f"--output_dir={parsing_run / 'train'}",
        f"--decode_from_file={tmp_path / 'in.txt'}",
        f"--decode_to_file={tmp_path / 'out.trees'}",
        f"--decode_reference={tmp_path / 'gold.trees'}",
        "--decode_hparams=beam_size=2",
        "--xla=off",
    )
    assert result.returncode == 0, result.stderr
    lines = (tmp_path / "out.trees").read_text().split("\n")
    assert lines.pop() == "" and len(lines) == len(sources) and lines[1] == ""
    for source, line in zip(sources, lines, strict=True):
        if source:
            tree = trees.parse_tree(line)
            assert tree.label == "TOP" and tree.words() == trees.escape_words(source)
    assert "(XX -LRB-)" in lines[2] and "(, ,)" in lines[2] and "('' '')" in lines[2]
    assert "(XX f-LRB-x-RRB-)" in lines[3]
    assert "output trees" in result.stderr  # The repairs, counted.
    assert "=== Summary ===" in result.stdout and "Bracketing FMeasure" in result.stdout
    assert "Number of Skip  sentence  =      1" in result.stdout  # The empty line.
    assert "BLEU" not in result.stdout


def test_decoding_the_test_split_scores_against_its_gold_trees(parsing_run: Path) -> None:
    result = run_in_process(
        "t2t-decoder",
        f"--output_dir={parsing_run / 'train'}",
        "--decode_hparams=beam_size=1",
        "--xla=off",
    )
    assert result.returncode == 0, result.stderr
    assert f"parsing_english_wsj16k test, {len(GOLD) - 132} sentences:" in result.stdout
    assert f"Number of sentence        = {len(GOLD) - 132:6d}" in result.stdout


def test_interactive_parsing_prints_a_tree_per_line(parsing_run: Path) -> None:
    result = run_in_process(
        "t2t-decoder",
        f"--output_dir={parsing_run / 'train'}",
        "--decode_interactive",
        "--decode_hparams=beam_size=1",
        "--xla=off",
        stdin=b"Mr. dog fell a mat .\n\n",
    )
    assert result.returncode == 0, result.stderr
    first, empty, end = result.stdout.split("\n")
    assert trees.parse_tree(first).words() == ["Mr.", "dog", "fell", "a", "mat", "."]
    assert (empty, end) == ("", "")


def test_the_saved_model_of_a_parser_returns_the_decoders_trees(
    parsing_run: Path, tmp_path: Path
) -> None:
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  Registers the SentencePiece ops.

    from t2t_keras.data.tree_tokens import tree_tokens
    from t2t_keras.registry import problem as registered_problem
    from t2t_keras.run.loading import load_trained
    from t2t_keras.search.settings import DecodeHParams
    from t2t_keras.serving.file_decoding import translate_lines
    from t2t_keras.serving.translator import Translator

    trained = load_trained(str(parsing_run / "train"), use_xla=False)
    long_line = " ".join(["cat"] * trained.hparams.max_length)  # Cut: words no XX takes.
    sources = [
        "The cat sat on the mat .",
        "",
        "He ( quietly ) rose up , '' market .",
        "f(x)\u3000` dog ' s ' {mat} [ ]",
        "\u20acuro \u2603 .",
        "\ufeff",
        long_line,
    ]
    result = run_in_process(
        "t2t-exporter",
        f"--output_dir={parsing_run / 'train'}",
        f"--export_dir={tmp_path / 'export'}",
        "--decode_hparams=beam_size=2,return_beams=true",
        "--xla=off",
    )
    assert result.returncode == 0, result.stderr
    serve = tf.saved_model.load(result.stdout.splitlines()[0]).signatures["serving_default"]
    exported = serve(inputs=tf.constant(sources))["outputs"].numpy().tolist()

    settings = DecodeHParams(beam_size=2, return_beams=True)
    tables = tree_tokens(trained.vocabs)
    translator = Translator(
        trained.model, trained.vocabs, settings.resolve(trained.hparams), False, tables
    )
    problem = registered_problem("parsing_english_wsj16k")
    decoded = translate_lines(translator, sources, problem)
    expected = [[*t.texts, *[""] * (2 - len(t.texts))] for t in decoded]
    assert [[tree.decode() for tree in row] for row in exported] == expected
    for source, (best, _) in zip(sources, expected, strict=True):
        assert (best == "") == (source == "")
        if best:
            assert trees.parse_tree(best).words() == trees.escape_words(source)
    assert "(XX -LRB-)" in expected[2][0] and "('' '')" in expected[2][0]


def test_a_parser_is_not_exported_without_the_tree_constraint(
    parsing_run: Path, tmp_path: Path
) -> None:
    result = run_in_process(
        "t2t-exporter",
        f"--output_dir={parsing_run / 'train'}",
        f"--export_dir={tmp_path / 'export'}",
        "--decode_hparams=tree_constraint=false",
        "--xla=off",
    )
    assert_user_error(result, "tree_constraint=false", "returns PTB trees")
    assert not (tmp_path / "export").exists()


def test_the_server_answers_with_the_decoders_trees(parsing_run: Path, tmp_path: Path) -> None:
    """t2t-server over the parser: lines sent as concurrent requests get the trees
    t2t-decoder writes for them (the server, a real process on loopback)."""
    from server_process import Server

    sources = [" ".join(trees.parse_tree(tree).words()) for tree in GOLD[132:137]]
    sources += ["", "He ( quietly ) rose up , '' market ."]
    (tmp_path / "in.txt").write_text("\n".join(sources) + "\n")
    settings = ["--decode_hparams=beam_size=2", "--xla=off"]
    train = f"--output_dir={parsing_run / 'train'}"
    decoded = run_in_process(
        "t2t-decoder", train, f"--decode_from_file={tmp_path / 'in.txt'}",
        f"--decode_to_file={tmp_path / 'out.trees'}", *settings,
    )  # fmt: skip
    assert decoded.returncode == 0, decoded.stderr
    expected = (tmp_path / "out.trees").read_text().split("\n")[:-1]
    server = Server(train, *settings, "--slot_widths=8", log=tmp_path / "server.log")
    try:
        server.wait_ready()
        requests = [sources[:1], sources[1:5], sources[5:]]
        with concurrent.futures.ThreadPoolExecutor(len(requests)) as pool:
            replies = list(
                pool.map(lambda part: server.post("v1/translate", {"inputs": part}), requests)
            )
        assert [output for _, body in replies for output in body["outputs"]] == expected
    finally:
        assert server.stop() == 0
