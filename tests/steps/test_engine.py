"""The step engine (:mod:`lockkit.steps.engine`): a waived skip passes and blocks nothing,
a plain one leaves the run incomplete; under ``-v`` each step's outcome and time, and
nothing at the default level."""

from __future__ import annotations

import re

import pytest

from lockkit._internal import log
from lockkit.steps.engine import StepFailed, Steps, StepSkipped, overall


@pytest.mark.parametrize("verbosity_,said", [(0, False), (1, True)], ids=["default", "verbose"])
def test_each_verify_step_is_timed_under_verbose(capsys, verbosity_, said):
    def fails(step: object) -> None:
        raise StepFailed("no GPU")

    log.configure(verbosity_)
    try:
        steps = Steps([("host", ()), ("gpu", ("host",))])
        steps.execute("host", lambda step: None)
        steps.execute("gpu", fails)
    finally:
        log.configure(0)
    err = capsys.readouterr().err
    assert bool(re.search(r"^step host: passed in \d+\.\d\d s\n"
                          r"step gpu: failed in \d+\.\d\d s\n$", err)) is said, err


# --- the step engine -------------------------------------------------------------------------

def test_a_waived_skip_passes_and_blocks_nothing_a_plain_skip_is_incomplete():
    def waive(step):
        raise StepSkipped("declared", waived=True)

    def skip(step):
        raise StepSkipped("not configured")

    steps = Steps([("a", ()), ("b", ("a",)), ("c", ("b",))])
    steps.execute("a", lambda s: None)
    steps.execute("b", waive)
    ran = steps.execute("c", lambda s: None)
    assert ran.status == "passed" and overall(steps) == "passed"
    assert steps["b"].result().waived and steps["b"].result().shown_status == "skipped (waived)"
    plain = Steps([("a", ()), ("b", ("a",))])
    plain.execute("a", skip)
    assert plain.execute("b", lambda s: None).status == "skipped"
    assert overall(plain) == "incomplete"
