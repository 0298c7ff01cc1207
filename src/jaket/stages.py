"""The stages of an evaluation run and their wall-clock time, for its log and its report.

A run that spends minutes in one place must say where: each stage is announced in the log when it
begins (``stage: NAME ...``) and when it ends, with its time (``stage: NAME: 12.3 s``), and
:meth:`StageTimes.as_dict` gives the times for ``metrics.json`` and the report (word-sense
disambiguation, sense linking and ``jaket link --model``). A stage that reads many texts shows its
own progress bar as well (:func:`jaket.senses.texts.text_vectors`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

logger = logging.getLogger(__name__)

#: digits kept of a stage's seconds in the report
DIGITS = 2


class StageTimes:
    """Seconds spent in each named stage, in the order the stages first ran (a stage run again
    adds to its time): ``with stages("sense texts"): ...``."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        logger.info("stage: %s ...", name)
        began = time.perf_counter()
        try:
            yield
        finally:
            spent = time.perf_counter() - began
            self.seconds[name] = self.seconds.get(name, 0.0) + spent
            logger.info("stage: %s: %.1f s", name, spent)

    def as_dict(self) -> dict[str, float]:
        """``{stage: seconds}`` (rounded to :data:`DIGITS`), in the order the stages first ran."""
        return {name: round(seconds, DIGITS) for name, seconds in self.seconds.items()}


def stage_line(seconds: dict[str, float]) -> str:
    """``"usage examples 0.4 s, base encoder: sense texts 61.2 s, ..."``: a report's line of
    :meth:`StageTimes.as_dict`."""
    return ", ".join(f"{name} {value:.1f} s" for name, value in seconds.items())
