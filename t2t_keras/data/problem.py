"""The Problem base class: where a task's data comes from and how it is encoded."""

from __future__ import annotations


class Problem:
    """A task: its data source, its vocabulary, its splits and its metrics.

    Subclasses are registered with `@registry.register_problem` and looked up
    with `registry.problem(name)`; `<name>_rev` gives the same problem with
    inputs and targets swapped.

    Args:
      was_reversed: swap inputs and targets (De->En from an En->De problem).
    """

    def __init__(self, was_reversed: bool = False) -> None:
        self.was_reversed = was_reversed

    @property
    def name(self) -> str:
        """The registered name, with `_rev` when reversed."""
        from t2t_keras import registry  # The registry imports this module.

        base = registry.problem_name(type(self))
        return f"{base}_rev" if self.was_reversed else base

    def __repr__(self) -> str:
        return f"<problem {self.name}>"
