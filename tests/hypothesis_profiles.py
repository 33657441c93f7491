"""The Hypothesis profiles of the property tests, and the settings of tests whose examples are costly.

  ci   (the default, and what `make test` names): the same examples on every run
       and every machine, so a red run is red again when rerun. No example
       database, so nothing one run found carries into the next: an example
       that ever failed is kept as an `@example` on its test instead. No
       deadline and no timing health check, since both fail by the load of the
       machine, not by the input; the suite's time budget catches slowness.
  dev  (`pytest --hypothesis-profile=dev`): new random examples every run, 500
       per test, with the example database and a deadline, to look for what ci
       does not draw. A failure it finds is printed as its falsifying example:
       add that to the test as an `@example`, so that ci runs it from then on.

Importable from every test module: pyproject.toml puts tests/ on the path.
"""

from __future__ import annotations

import datetime
from typing import Any

from hypothesis import HealthCheck, settings

CI, DEV = "ci", "dev"
DEV_EXAMPLES = 500

settings.register_profile(
    CI,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    DEV,
    max_examples=DEV_EXAMPLES,
    derandomize=False,
    deadline=datetime.timedelta(seconds=1),
    print_blob=True,
)


def ci_budget(examples: int, **kwargs: Any) -> settings:
    """Settings of a test whose examples cost too much for ci's default count.

    Args:
      examples: how many the ci profile runs; any other profile runs its own
        max_examples (dev: 500).
      kwargs: other settings, e.g. deadline=None for examples that take seconds.
    """
    if settings.default is settings.get_profile(CI):  # The profile loaded last.
        kwargs["max_examples"] = examples
    return settings(**kwargs)
