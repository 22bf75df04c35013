"""The one subprocess wrapper: every command recorded, a timeout its own outcome, and
``check`` raising a CommandError that carries stderr."""

from __future__ import annotations

import sys

import pytest

from lockkit import _run
from lockkit.errors import CommandError


def test_call_records_every_command_and_how_it_ended():
    seen: list[_run.Result] = []
    ok = _run.call([sys.executable, "-c", "print('hi')"], record=seen.append)
    bad = _run.call([sys.executable, "-c", "import sys; sys.exit('error: nope')"],
                    record=seen.append)
    assert [r.returncode for r in seen] == [0, 1] and ok.stdout == "hi\n"
    assert _run.outcome(bad) == "exited 1: error: nope"
    assert all(r.duration > 0 and not r.timed_out for r in seen)


def test_a_command_that_cannot_start_is_a_result_not_a_traceback(tmp_path):
    result = _run.call([str(tmp_path / "missing-binary")])
    assert result.returncode == 127 and "cannot run" in result.stderr


def test_timeout_is_its_own_outcome():
    result = _run.call([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    assert result.timed_out and result.returncode is None
    assert _run.outcome(result) == "timed out after 0.5s"


def test_check_raises_command_error_with_stderr():
    with pytest.raises(CommandError) as err:
        _run.check([sys.executable, "-c", "import sys; print('x', file=sys.stderr); "
                    "sys.exit(3)"], what="the thing")
    assert str(err.value) == "the thing exited 3: x"
    assert err.value.returncode == 3 and err.value.stderr == "x\n" and not err.value.timed_out
    with pytest.raises(CommandError) as err:
        _run.check([sys.executable, "-c", "import time; time.sleep(30)"], what="sleep",
                   timeout=0.5)
    assert err.value.timed_out and str(err.value) == "sleep timed out after 0.5s"


def test_output_that_is_not_utf8_is_kept_not_fatal():
    result = _run.call([sys.executable, "-c",
                        "import sys; sys.stdout.buffer.write(b'caf\\xe9\\n')"])
    assert result.ok and result.stdout == "caf\ufffd\n"
