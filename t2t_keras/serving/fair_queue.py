"""The sentences waiting for a slot, taken fairly across the requests that sent them.

A 1,000-line request must not hold a one-line request behind its remaining
sentences: each take goes round the requests that have sentences waiting,
one sentence from each in turn, oldest request first, and a request that is
cancelled (its client gone) has its waiting sentences removed at once.
"""

from __future__ import annotations

import collections
from collections.abc import Hashable
from typing import Generic, TypeVar

Item = TypeVar("Item")


class FairQueue(Generic[Item]):
    """Items queued per request, taken round-robin across requests."""

    def __init__(self) -> None:
        self._waiting: collections.OrderedDict[Hashable, collections.deque[Item]] = (
            collections.OrderedDict()
        )
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def put(self, request: Hashable, items: list[Item], first: bool = False) -> None:
        """Queues a request's items after those it has waiting (`first`: before every
        request's, for sentences already searched once that need longer slots)."""
        if not items:
            return
        waiting = self._waiting.setdefault(request, collections.deque())
        waiting.extend(items)
        if first:
            self._waiting.move_to_end(request, last=False)
        self._size += len(items)

    def take(self, count: int) -> list[tuple[Hashable, Item]]:
        """Up to `count` (request, item) pairs, one per request in turn; a request
        served goes behind the others."""
        taken: list[tuple[Hashable, Item]] = []
        while len(taken) < count and self._waiting:
            request, waiting = next(iter(self._waiting.items()))
            taken.append((request, waiting.popleft()))
            if waiting:
                self._waiting.move_to_end(request)
            else:
                del self._waiting[request]
        self._size -= len(taken)
        return taken

    def remove(self, request: Hashable) -> int:
        """Drops a request's waiting items; how many there were."""
        removed = len(self._waiting.pop(request, ()))
        self._size -= removed
        return removed
