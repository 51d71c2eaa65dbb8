"""The experiment report as HTML or Markdown — kept for callers of the first version.

The renderers now live in :mod:`tokcaliper.report.formats` (one exporter per
format over every reportable result); these three names are thin aliases.
"""

from __future__ import annotations

from tokcaliper.experiment.report_data import ExperimentReport
from tokcaliper.report.formats.html import write_html
from tokcaliper.report.formats.markdown import write_markdown
from tokcaliper.report.formats.pages import experiment_outline, verdict_sentence

__all__ = ["experiment_html", "experiment_markdown", "verdict_sentence"]


def experiment_html(rep: ExperimentReport) -> str:
    """The experiment's self-contained HTML page (:class:`~tokcaliper.report.formats.HtmlExporter`)."""
    return write_html(experiment_outline(rep))


def experiment_markdown(rep: ExperimentReport) -> str:
    """The experiment's Markdown summary (:class:`~tokcaliper.report.formats.MarkdownExporter`)."""
    return write_markdown(experiment_outline(rep))
