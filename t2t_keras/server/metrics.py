"""The server's Prometheus metrics, read from the engine when scraped."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from t2t_keras.serving.engine import Engine

# Request latency buckets, seconds: a typed line's to a long file's.
LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class Metrics:
    """Counters the HTTP front updates, gauges that read the engine."""

    def __init__(self, engine: Engine, ready: Callable[[], bool]) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "t2t_requests", "HTTP requests answered, by route and status.",
            ["route", "status"], registry=self.registry,
        )  # fmt: skip
        self.sentences = Counter(
            "t2t_sentences", "Input sentences answered.", registry=self.registry
        )
        self.latency = Histogram(
            "t2t_request_latency_seconds", "Translation requests' seconds, received to answered.",
            buckets=LATENCY_BUCKETS, registry=self.registry,
        )  # fmt: skip
        gauges = {
            "t2t_queue_sentences": ("Sentences waiting for a slot.", engine.queued),
            "t2t_max_queue_sentences": (
                "The most sentences that may wait.",
                lambda: engine.max_queue_sentences,
            ),
            "t2t_busy_slots": ("Sentences in the search's slots.", engine.backend.busy),
            "t2t_slots": ("Sentences the search holds at once.", lambda: engine.backend.slots),
            "t2t_compilations": (
                "Shapes of the search compiled; constant once ready.",
                engine.backend.compilations,
            ),
            "t2t_ready": (
                "1 once compiled and serving, 0 before and once draining.",
                lambda: float(ready()),
            ),
        }
        for name, (text, read) in gauges.items():
            Gauge(name, text, registry=self.registry).set_function(read)
