"""``-v`` and ``-q`` through the ``lockkit`` logger (:mod:`lockkit._internal.log`): each
level shows its lines, redacted and without a level prefix, and ``-q`` turns the progress
bars off."""

from __future__ import annotations

import io

import pytest

from lockkit._internal import log, ui


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal, so rich draws its bars there."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("verbosity_,drawn", [(0, True), (-1, False)], ids=["default", "quiet"])
def test_progress_bars_are_off_under_quiet(monkeypatch, verbosity_, drawn):
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    monkeypatch.setenv("TERM", "xterm")
    log.configure(verbosity_)
    try:
        with ui.progress("working", total=2) as advance:
            advance(1)
            advance(1)
        with ui.transfer("fetching", files=1, total_bytes=10) as moved:
            moved.moved(10)
            moved.file_done()
    finally:
        log.configure(0)
    assert bool(terminal.getvalue()) is drawn


@pytest.mark.parametrize("verbosity_,shown", [
    (-1, {"error"}), (0, {"error", "warning", "status"}),
    (1, {"error", "warning", "status", "verbose"}),
    (2, {"error", "warning", "status", "verbose", "debug"})])
def test_each_level_shows_its_lines_redacted_without_a_level_prefix(monkeypatch, capsys,
                                                                    verbosity_, shown):
    from lockkit._internal.redact import NO_SECRETS, Secrets

    log.configure(verbosity_)
    log.hide(Secrets.of({"${LK_VERBOSITY_TOKEN}": "tok-12345"}))  # as cli.common.load does
    try:
        ui.error("error line")
        ui.warn("warning line")
        ui.say("status line")
        log.logger().getChild("index").log(log.VERBOSE, "verbose http://u:tok-12345@h/ line")
        log.logger().getChild("index").debug("debug line")
        ui.say("status line with the project's token tok-12345")
    finally:
        log.configure(0)
        log.hide(NO_SECRETS)
    err = capsys.readouterr().err
    said = {ln.split()[0].removeprefix("warning:").strip() or "warning"
            for ln in err.splitlines()}
    assert said == shown, err
    assert "tok-12345" not in err and "INFO" not in err and "ERROR" not in err
    if "status" in shown:
        assert "status line with the project's token ${LK_VERBOSITY_TOKEN}" in err
    if "verbose" in shown:
        assert "verbose http://***@h/ line" in err
