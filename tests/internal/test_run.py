"""The one subprocess wrapper: every command recorded, a timeout its own outcome, and
``check`` raising a CommandError that carries stderr."""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import threading
import time

import pytest

from lockkit._internal import proc
from lockkit.errors import CommandError
from tests.support.procs import gone, pid_written


def test_call_records_every_command_and_how_it_ended():
    seen: list[proc.Result] = []
    ok = proc.call([sys.executable, "-c", "print('hi')"], record=seen.append)
    bad = proc.call([sys.executable, "-c", "import sys; sys.exit('error: nope')"],
                    record=seen.append)
    assert [r.returncode for r in seen] == [0, 1] and ok.stdout == "hi\n"
    assert proc.outcome(bad) == "exited 1: error: nope"
    assert all(r.duration > 0 and not r.timed_out for r in seen)


def test_a_command_that_cannot_start_is_a_result_not_a_traceback(tmp_path):
    result = proc.call([str(tmp_path / "missing-binary")])
    assert result.returncode == 127 and "cannot run" in result.stderr


def test_timeout_is_its_own_outcome():
    result = proc.call([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    assert result.timed_out and result.returncode is None
    assert proc.outcome(result) == "timed out after 0.5s"


def test_check_raises_command_error_with_stderr():
    with pytest.raises(CommandError) as err:
        proc.check([sys.executable, "-c", "import sys; print('x', file=sys.stderr); "
                    "sys.exit(3)"], what="the thing")
    assert str(err.value) == "the thing exited 3: x"
    assert err.value.returncode == 3 and err.value.stderr == "x\n" and not err.value.timed_out
    with pytest.raises(CommandError) as err:
        proc.check([sys.executable, "-c", "import time; time.sleep(30)"], what="sleep",
                   timeout=0.5)
    assert err.value.timed_out and str(err.value) == "sleep timed out after 0.5s"


def test_output_that_is_not_utf8_is_kept_not_fatal():
    result = proc.call([sys.executable, "-c",
                        "import sys; sys.stdout.buffer.write(b'caf\\xe9\\n')"])
    assert result.ok and result.stdout == "caf\ufffd\n"



@pytest.mark.skipif(os.name == "nt", reason="process groups are POSIX")
def test_a_stop_set_from_another_thread_kills_the_command_and_its_group_at_once(tmp_path):
    """compile's routing index stops uv this way when a page uv waits for cannot be had:
    the call returns as a killed command (SIGKILL), long before the command's own end,
    and a grandchild in its group goes with it."""
    pidfile = tmp_path / "grandchild.pid"
    spawn = ("import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', "
             "'import time; time.sleep(60)']); open(sys.argv[1], 'w').write(str(p.pid)); "
             "time.sleep(60)")
    stop = proc.Stop()

    def stop_once_started() -> None:
        pid_written(pidfile)
        stop.set()

    threading.Thread(target=stop_once_started, daemon=True).start()
    start = time.monotonic()
    result = proc.call([sys.executable, "-c", spawn, str(pidfile)], timeout=60, stop=stop)
    assert result.returncode == -signal.SIGKILL and stop.is_set()
    assert time.monotonic() - start < 30  # the command's own end: 60 s
    assert gone(pid_written(pidfile))


def test_a_stop_set_before_the_start_kills_the_command_as_it_starts():
    stop = proc.Stop()
    stop.set()
    result = proc.call([sys.executable, "-c", "import time; time.sleep(60)"], timeout=60,
                       stop=stop)
    assert result.returncode is not None and result.returncode < 0
    assert result.duration < 30


def test_a_stop_set_after_the_end_touches_nothing():
    stop = proc.Stop()
    result = proc.call([sys.executable, "-c", "print('done')"], stop=stop)
    stop.set()  # no process is attached any more: nothing is signalled
    assert result.ok and result.stdout == "done\n"


_SPAWN = textwrap.dedent("""
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    open(sys.argv[1], "w").write(str(child.pid))
    time.sleep(300)
""")


@pytest.mark.skipif(os.name == "nt", reason="process groups are POSIX")
def test_application_timeout_kills_its_grandchild(tmp_path):
    """verify's application step runs through proc.call: at the timeout the whole group
    goes, not only the direct child."""
    pidfile = tmp_path / "grandchild.pid"
    start = time.monotonic()
    result = proc.call([sys.executable, "-c", _SPAWN, str(pidfile)], timeout=2,
                       env=proc.isolated_env())
    # A timeout is its own outcome, not an exit code (-1 would read as SIGHUP).
    assert result.timed_out and result.returncode is None
    assert proc.outcome(result) == "timed out after 2s"
    assert time.monotonic() - start < 10
    assert gone(pid_written(pidfile))
