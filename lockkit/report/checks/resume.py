"""The training-resume check's part of the dossier: ``checks.resume``
(:class:`~lockkit.report.records.ResumeResult`) and its section of ``dossier.md``."""

from __future__ import annotations

from lockkit.report.checks.interface import Recorded
from lockkit.report.records import ResumeResult
from lockkit.report.shapes import ResumeDoc

__all__ = ["RESUME"]


def _markdown(r: ResumeResult) -> list[str]:
    tolerance = "exact" if not (r.atol or r.rtol) else f"atol {r.atol:g}, rtol {r.rtol:g}"
    return ["", "## Training resume", "",
            f"- {'✔' if r.passed else '✘'} {r.steps}+{r.resume_steps} steps "
            f"uninterrupted against {r.steps} steps, checkpoint, then a new process "
            f"for {r.resume_steps}: " + (r.first_error or "identical"),
            f"- tolerance: {tolerance}" + (f" ({r.reason})" if r.reason else "")
            + (f"; largest loss difference {r.max_loss_diff:.3g}"
               if r.max_loss_diff is not None else "")]


RESUME = Recorded(key="resume", record=ResumeResult, load=ResumeResult.from_dict,
                  markdown=_markdown, shape=ResumeDoc)
