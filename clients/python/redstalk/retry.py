"""Sending a put again when its reply was lost: when, how often, and for how long."""

from __future__ import annotations

import itertools
import logging
import random
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from .commands import Request

log = logging.getLogger("redstalk.client")


@dataclass(frozen=True)
class RetryPolicy:
    """How a request safe to send twice (a put-with with a key) is sent again on a new
    connection when the old one was lost, reset or timed out before its reply: at most
    `attempts` sends in all, none starting later than `deadline` seconds after the call
    began, the waits between them doubling from `backoff` up to `max_backoff` seconds,
    each jittered over its upper half. `RetryPolicy(attempts=1)` never sends again."""

    attempts: int = 6
    deadline: float = 30.0
    backoff: float = 0.2
    max_backoff: float = 5.0

    def delays(self) -> Iterator[float]:
        """The waits before each send after the first; ends when the attempts or the
        deadline (counted from this call) are spent."""
        give_up = time.monotonic() + self.deadline
        caps = (min(self.max_backoff, self.backoff * 2.0**n) for n in range(self.attempts - 1))
        waits = (random.uniform(cap / 2, cap) for cap in caps)
        return itertools.takewhile(lambda wait: time.monotonic() + wait <= give_up, waits)


def retry_delay(pending: Sequence[Request[Any]], delays: Iterator[float], err: BaseException) -> float | None:
    """Seconds to wait before sending the unanswered requests again on a new connection,
    or None: one of them is not safe to send twice, or the policy is spent."""
    if not pending or not all(request.retry for request in pending):
        return None
    delay = next(delays, None)
    if delay is not None:
        log.warning("reply lost (%r): sending %d request(s) again in %.2f s", err, len(pending), delay)
    return delay
