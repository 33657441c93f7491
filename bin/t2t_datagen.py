"""t2t-datagen: writes a registered problem's vocabulary and TFRecord shards.

t2t-datagen --problem=translate_ende_wmt_bpe37k --data_dir=DATA --tmp_dir=TMP

Downloads what the problem needs into --tmp_dir (files already there are used
as they are), trains the vocabulary once and writes the shards of every split
that is missing; a second run does nothing. An interrupted run leaves no shard
that looks complete.
"""

from __future__ import annotations

from absl import flags

from t2t_keras.bin import flag_groups, program

flag_groups.define_registry_flags()
flag_groups.define_problem_flag()
flag_groups.define_data_flags()
flag_groups.define_source_flags()
flags.DEFINE_integer(
    "show_examples",
    0,
    "Then print this many dev examples decoded back to text, to check the data.",
    lower_bound=0,
)
FLAGS = flags.FLAGS


def main() -> int:
    if flag_groups.start():
        return 0
    problem = flag_groups.resolve_problem()
    flag_groups.generate_data(problem)
    if FLAGS.show_examples:
        data_dir = flag_groups.required("data_dir", "the data directory")
        for inputs, targets in problem.text_examples(data_dir, "dev", FLAGS.show_examples):
            print(f"  {inputs}  ->  {targets}")
    return 0


def run() -> None:
    """Console entry point."""
    program.run(main)


if __name__ == "__main__":
    run()
