"""The commands of docs/reproducing_the_paper.md run as written, at tiny scale.

Every t2t-* command of the page's code block runs, in order, with its own
flags; the test changes only the scale, each change listed in SCALE and
TINY: a few training steps, a checkpoint at each, a model of d_model 16 fed
batches of one shape without XLA (and decoding without it), 2 accumulated
micro-batches for the _single_gpu sets' 8, the two logical CPU devices of the
tests for the eight GPUs, and float32 for float16 after the first trainer
(FLOAT16). The corpus is the local plain-text source built from
../shared/data/wmt: newstest2008-2012 as training text, newstest2013 as dev,
and (the sample has no newstest2014) 20 held-out newstest2012 sentences as the
test set.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from binaries import run_in_process
from doc_pages import DOCS, code_blocks

ROOT = Path(__file__).resolve().parents[1]
SHARED_WMT = ROOT.parent / "shared" / "data" / "wmt"
PAGE = DOCS / "reproducing_the_paper.md"
TEST_SENTENCES = 20

pytestmark = pytest.mark.skipif(
    not SHARED_WMT.exists(), reason="needs the WMT sample in ../shared/data/wmt"
)

# (pattern, replacement): the only changes made to the page's commands.
SCALE = (
    (r"--train_steps=\d+", "--train_steps=3"),
    (r"--save_checkpoints_steps=0", "--save_checkpoints_steps=1"),
    (r"--save_checkpoints_secs=\d+", "--save_checkpoints_secs=0"),
    (r"--num_gpus=8", ""),  # Mirrored over the tests' two logical CPU devices instead.
)
# Added to each t2t-trainer command: a tiny model whose batches all have one
# shape (one bucket), attention uncompiled (compiling costs more than 3 steps
# save; other tests cover XLA), one dev batch; the first
# trainer's evaluation also decodes 4 dev sentences for BLEU, the others none.
TINY = (
    "--hparams=num_encoder_layers=1,num_decoder_layers=1,d_model=16,d_ff=32,num_heads=2,"
    "batch_size=512,max_length=64,min_length_bucket=64",
    "--eval_steps=1",
    "--random_seed=1",
    "--xla=off",
)
# And to the _single_gpu sets: 2 accumulated micro-batches instead of 8.
FEWER_MICRO_BATCHES = ",gradient_accumulation_steps=2"
# The trainers after the first train in float32: float16 is the GPUs' precision, whose
# products a CPU only emulates, at 1-2 s a step with the 37k vocabulary's softmax.
FLOAT16 = (r"--mixed_precision=fp16", "--mixed_precision=off")


def page_commands() -> tuple[dict[str, str], list[str]]:
    """The page's shell variables and its commands, continuation lines joined."""
    (block,) = code_blocks(PAGE, "sh")
    lines = [line for line in block.replace("\\\n", " ").splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("#")]
    variables = dict(word.split("=", 1) for word in shlex.split(lines[0]))
    return variables, lines[1:]


def local_corpus(tmp_dir: Path) -> None:
    """The plain-text source: train.{en,de}, newstest2013.{en,de}, newstest2014.{en,de}."""
    tmp_dir.mkdir()
    for language in ("en", "de"):
        text = {
            year: (SHARED_WMT / f"newstest{year}.{language}").read_text(encoding="utf-8")
            for year in range(2008, 2014)
        }
        held_out = text[2012].splitlines(keepends=True)
        train = "".join(text[year] for year in range(2008, 2012))
        train += "".join(held_out[TEST_SENTENCES:])
        (tmp_dir / f"train.{language}").write_text(train, encoding="utf-8")
        (tmp_dir / f"newstest2013.{language}").write_text(text[2013], encoding="utf-8")
        (tmp_dir / f"newstest2014.{language}").write_text(
            "".join(held_out[:TEST_SENTENCES]), encoding="utf-8"
        )


def at_tiny_scale(command: str, variables: dict[str, str], first_trainer: bool) -> list[str]:
    for name, value in variables.items():
        command = command.replace(f"${name}", value)
    for pattern, replacement in SCALE if first_trainer else (*SCALE, FLOAT16):
        command = re.sub(pattern, replacement, command)
    words = shlex.split(command)
    if words[0] == "t2t-decoder":  # 20 sentences: compiling the search costs more than it saves.
        return [*words, "--xla=off"]
    if words[0] != "t2t-trainer":
        return words
    hparams, *flags = TINY
    if "_single_gpu" in command:
        hparams += FEWER_MICRO_BATCHES
    return [*words, hparams, *flags, f"--eval_bleu_examples={4 if first_trainer else 0}"]


def test_the_papers_recipe_runs_from_data_to_scored_newstest2014(tmp_path: Path) -> None:
    variables, commands = page_commands()
    assert set(variables) == {"DATA", "TMP", "TRAIN"}
    ours = {name: str(tmp_path / name.lower()) for name in variables}
    local_corpus(Path(ours["TMP"]))
    binaries = [command.split()[0] for command in commands]
    assert binaries.count("t2t-trainer") == 4 and binaries[-2:] == ["t2t-bleu"] * 2
    outputs = []
    for index, command in enumerate(commands):
        binary, *args = at_tiny_scale(command, ours, index == binaries.index("t2t-trainer"))
        result = run_in_process(binary, *args)
        assert result.returncode == 0, f"{command}\n{result.stderr[-3000:]}"
        outputs.append(result.stdout + result.stderr)

    data = Path(ours["DATA"])
    assert '"source": "local"' in (data / "translate_ende_wmt_bpe37k-source.json").read_text()
    reference = (data / "newstest2014.de").read_text(encoding="utf-8").splitlines()
    assert len(reference) == TEST_SENTENCES
    train = Path(ours["TRAIN"])
    for run in ("base", "big", "base_1gpu", "big_1gpu"):
        assert json.loads((train / run / "run.json").read_text())["data_source"] == "local"
        assert (train / run / "averaged" / "run.json").exists(), run
    for run in ("base", "big"):
        translation = (train / f"{run}.newstest2014.de").read_text(encoding="utf-8")
        assert len(translation.splitlines()) == TEST_SENTENCES
    # Both conventions printed for each system.
    for scores in outputs[-2:]:
        assert re.search(r"^BLEU \(sacreBLEU: cased.*\|version:", scores, re.MULTILINE), scores
        assert re.search(r"^BLEU \(paper: Moses-tokenized", scores, re.MULTILINE), scores
    # Dev BLEU on the raw newstest2013 text during training.
    assert re.search(r"eval at step 3: .*bleu", outputs[1]), outputs[1][-2000:]
