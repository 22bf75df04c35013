"""The one retry loop (lockkit.index.retry.attempts): as many attempts as the policy says,
its pauses ended at once by the stop event, and what the caller gets when none follows."""

from __future__ import annotations

import threading

import pytest

from lockkit.index.http import Policy
from lockkit.index.retry import Again, attempts


def test_the_last_failed_attempt_is_settled_and_each_earlier_one_discarded():
    tried: list[int] = []
    discarded: list[int] = []

    def once(attempt: int) -> str:
        tried.append(attempt)
        raise Again("cut", settle=lambda tries, stopped: f"settled {tries} {stopped}",
                    discard=lambda: discarded.append(attempt))

    assert attempts(Policy(attempts=3, backoff=0.001), None, "x", once) == "settled 3 False"
    assert tried == [0, 1, 2] and discarded == [0, 1]


def test_a_stop_during_the_pause_ends_the_loop_with_no_attempt_after():
    stop = threading.Event()
    tried: list[int] = []

    def once(attempt: int) -> str:
        tried.append(attempt)
        stop.set()  # Ctrl-C while this attempt failed: the 1000 s pause ends at once
        raise Again("cut", settle=lambda tries, stopped: f"settled {tries} {stopped}")

    assert attempts(Policy(attempts=5, backoff=1000.0), stop, "x", once) == "settled 1 True"
    assert tried == [0]


def test_a_failure_that_is_not_again_is_raised_at_once():
    tried: list[int] = []

    def once(attempt: int) -> str:
        tried.append(attempt)
        raise ValueError("not worth another")

    with pytest.raises(ValueError):
        attempts(Policy(attempts=5, backoff=0.001), None, "x", once)
    assert tried == [0]
