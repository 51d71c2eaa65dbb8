"""Errors that reach the user as one line, never as a traceback.

Every failure a user can cause or meet (bad input, an unreachable server, a
server that dies, a malformed record) is raised as a :class:`TokcaliperError`
subclass whose message names the culprit. The CLI prints
``tokcaliper: error: <message>`` and exits with :attr:`exit_code`.
"""

from __future__ import annotations


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
