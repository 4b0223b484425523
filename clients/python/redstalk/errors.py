"""One exception class per protocol error word, all under RedstalkError."""

from __future__ import annotations


class RedstalkError(Exception):
    """Base of every error this client raises for a server reply or a broken connection."""

    word = ""  # the protocol reply word, for the classes below


class BadFormat(RedstalkError):
    word = "BAD_FORMAT"


class UnknownCommand(RedstalkError):
    word = "UNKNOWN_COMMAND"


class OutOfMemory(RedstalkError):
    """redstalk: Redis refused the write (maxmemory); nothing was stored."""

    word = "OUT_OF_MEMORY"


class InternalError(RedstalkError):
    """redstalk: Redis unreachable or too slow; the effect of this one command is unknown."""

    word = "INTERNAL_ERROR"


class Draining(RedstalkError):
    word = "DRAINING"


class NotFound(RedstalkError):
    word = "NOT_FOUND"


class NotIgnored(RedstalkError):
    """`ignore` of the last watched tube."""

    word = "NOT_IGNORED"


class JobTooBig(RedstalkError):
    word = "JOB_TOO_BIG"


class ExpectedCrlf(RedstalkError):
    word = "EXPECTED_CRLF"


class DeadlineSoon(RedstalkError):
    """A job reserved by this connection is within a second of its TTR."""

    word = "DEADLINE_SOON"


class TimedOut(RedstalkError):
    word = "TIMED_OUT"


class Unauthorized(RedstalkError):
    """redstalk: the server wants `auth <token>` first, or the token given was wrong
    (after three wrong tokens the server closes the connection)."""

    word = "UNAUTHORIZED"


class Buried(RedstalkError):
    """`put` or `release` ended with the job buried (the server could not grow its queue)."""

    word = "BURIED"

    def __init__(self, job_id: int | None) -> None:
        super().__init__(f"job {job_id} was buried")
        self.job_id = job_id


class UnexpectedReply(RedstalkError):
    """A reply this command cannot have: the connection is out of step and is closed."""


class ConnectionClosed(RedstalkError, ConnectionError):
    """The server closed the connection (or it was closed here) before a reply was complete."""


ERRORS: dict[str, type[RedstalkError]] = {
    cls.word: cls
    for cls in (
        BadFormat,
        UnknownCommand,
        OutOfMemory,
        InternalError,
        Draining,
        NotFound,
        NotIgnored,
        JobTooBig,
        ExpectedCrlf,
        DeadlineSoon,
        TimedOut,
        Unauthorized,
    )
}
"""Error words that mean the same whatever the command (BURIED depends on it: see Buried)."""
