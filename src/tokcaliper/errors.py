"""Errors that reach the user as one line, never as a traceback.

Every failure a user can cause or meet (bad input, an unreachable server, a
server that dies, a malformed record) is raised as a :class:`TokcaliperError`
subclass whose message names the culprit. The CLI prints
``tokcaliper: error: <message>`` and exits with :attr:`exit_code`.

Exit codes: 0 success; 1 internal error (a bug); 2 bad argument or input; 3 server
unreachable, failed to start or died; 4 results database missing, unreadable or
unwritable; 5 experiment stopped on purpose; 10 audit: a record fails a check;
11 diff: the records are not comparable; 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP;
141 the reader of stdout went away (``tokcaliper runs | head -1``), as for any tool killed by SIGPIPE.
"""

from __future__ import annotations

#: Exit codes of verdicts (a finished command's answer, not a failure of tokcaliper),
#: distinct from errors so that CI can tell a crash (1) from an answer:
#: ``tokcaliper audit`` found a record that fails a check.
EXIT_AUDIT_FAIL = 10
#: ``tokcaliper diff``: the two records are not comparable (a knob that matters differs).
EXIT_NOT_COMPARABLE = 11
#: ``tokcaliper compare --baseline``: the new runs are slower than the baseline (the gate's
#: verdict: p < α after Holm and the CI outside the noise band).
EXIT_REGRESSION = 20
#: ``tokcaliper compare --baseline --fail-on-inconclusive``: the runs could tell neither a
#: regression nor its absence (without the flag an inconclusive gate exits 0).
EXIT_GATE_INCONCLUSIVE = 21
#: An unexpected internal error (a bug): the one-line message says so.
EXIT_INTERNAL = 1
#: stdout's reader closed the pipe (``tokcaliper runs | head -1``): 128 + SIGPIPE, the
#: status a shell reports for any tool stopped that way; nothing is printed.
EXIT_BROKEN_PIPE = 141


class TokcaliperError(Exception):
    """Base class for errors shown to the user as a single line.

    Attributes:
        exit_code: process exit status the CLI uses (2 for usage/input errors).
    """

    exit_code: int = 2


class InputError(TokcaliperError):
    """A bad argument, file or record given by the user."""


class ServerError(TokcaliperError):
    """The server under test is unreachable, failed to start, or died mid-run."""

    exit_code = 3


class StoreError(TokcaliperError):
    """The results database cannot be opened, written or queried."""

    exit_code = 4


class ExperimentBusy(StoreError):
    """Another live process is measuring this experiment (``experiment run`` or ``resume``);
    the message names its pid. Exit 4, like a locked database."""


class ExperimentStopped(TokcaliperError):
    """An experiment stopped on purpose (a read-back mismatch); its runs so far are stored.

    ``tokcaliper experiment resume ID`` continues it.
    """

    exit_code = 5


class Interrupted(TokcaliperError):
    """Ctrl-C, SIGTERM or SIGHUP stopped a command; the message says what was stored.

    The CLI prints ``tokcaliper: interrupted[ by SIGTERM]; <message>`` and exits 130 for
    Ctrl-C, 128 + the signal's number otherwise (143 SIGTERM, 129 SIGHUP).
    """

    exit_code = 130
