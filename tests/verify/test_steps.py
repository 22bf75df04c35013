"""The step engine (:mod:`lockkit.verify.steps`), as ``-v`` shows it: each step's outcome
and time, and nothing at the default level."""

from __future__ import annotations

import re

import pytest

from lockkit._internal import log
from lockkit.verify.steps import StepFailed, Steps


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
