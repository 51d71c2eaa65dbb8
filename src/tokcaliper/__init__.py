"""tokcaliper: trustworthy LLM-inference performance numbers.

Two jobs (methods M1–M11 and A1–A11 in ``docs/METHODS.md``):

* measure your own OpenAI-compatible server honestly (repetitions, noise floor,
  MDE, Welch's t-test, telemetry), and
* audit benchmark numbers that others publish (acceptance length ÷ draft
  window, power ÷ TDP, roofline, self-drawn curves, comparability).

Pure computation lives in :mod:`tokcaliper.stats` and :mod:`tokcaliper.audit`
(checks); I/O lives in :mod:`tokcaliper.load`, :mod:`tokcaliper.servers`,
:mod:`tokcaliper.telemetry` and :mod:`tokcaliper.store`.
"""

__version__ = "0.1.0"
