"""Every command of redstalk, written once.

A command method builds a Request (the bytes to send and how to decode the reply) and hands
it to `_call_many`, which each client implements: Client runs it and returns the result,
AsyncClient returns a coroutine of the result, Pipeline queues it. So `client.put(b"x")`,
`await aclient.put(b"x")` and `pipeline.put(b"x")` share this one definition.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, TypeVar

from .errors import ERRORS, Buried, NotFound, RedstalkError, UnexpectedReply
from .protocol import CRLF, Reply, Scalar, parse_yaml_dict, parse_yaml_list

T = TypeVar("T")

DEFAULT_PRIORITY = 1024  # the most urgent priority that is not "urgent" (< 1024) in stats
DEFAULT_TTR = 60
U32_MAX = 2**32 - 1

Stats = dict[str, Scalar]
Outcome = Any  # a decoded result, or the RedstalkError instance the reply stands for


@dataclass(frozen=True)
class Job:
    id: int
    body: bytes


class RoomState(StrEnum):
    ENTERED = "ENTERED"  # inside
    READY = "READY"  # may enter now (check only: enter to take the place)
    WAITING = "WAITING"  # in line


@dataclass(frozen=True)
class RoomStatus:
    state: RoomState
    position: int = 0  # place in line, 1 first; 0 unless WAITING
    eta: int = 0  # estimated seconds to wait; 0 also means "no estimate"

    @property
    def waiting(self) -> bool:
        return self.state is RoomState.WAITING


@dataclass(frozen=True)
class Request(Generic[T]):
    line: bytes
    decode: Callable[[Reply], T]
    body: bytes | None = None
    wait: float | None = 0.0  # how long the server may rightly hold the reply back; None: forever

    def encode(self) -> bytes:
        data = self.line + CRLF
        return data if self.body is None else data + self.body + CRLF

    def reply_timeout(self, timeout: float | None) -> float | None:
        """A client's reply timeout, stretched by what this command may wait on purpose."""
        return None if timeout is None or self.wait is None else timeout + self.wait


def error_for(reply: Reply, job_id: int | None = None) -> RedstalkError:
    """The exception a reply stands for when it is not the command's success reply."""
    if reply.word in ERRORS:
        return ERRORS[reply.word](reply.line)
    if reply.word == "BURIED":
        return Buried(int(reply.args[0]) if reply.args else job_id)
    return UnexpectedReply(f"unexpected reply {reply.line!r}")


def _expect(reply: Reply, word: str, nargs: int = 0, job_id: int | None = None) -> tuple[str, ...]:
    if reply.word == word and len(reply.args) == nargs:
        return reply.args
    raise error_for(reply, job_id)


def _none(word: str, job_id: int | None = None) -> Callable[[Reply], None]:
    def decode(reply: Reply) -> None:
        _expect(reply, word, job_id=job_id)

    return decode


def _number(word: str) -> Callable[[Reply], int]:
    return lambda reply: int(_expect(reply, word, 1)[0])


def _text(word: str) -> Callable[[Reply], str]:
    return lambda reply: _expect(reply, word, 1)[0]


def _job(word: str) -> Callable[[Reply], Job]:
    def decode(reply: Reply) -> Job:
        job_id, _ = _expect(reply, word, 2)
        return Job(int(job_id), reply.body or b"")

    return decode


def _jobs(reply: Reply) -> list[Job]:
    _expect(reply, "RESERVED-MANY", 1)
    return [Job(int(block.args[0]), block.body or b"") for block in reply.jobs]


def _stats(text_keys: frozenset[str] = frozenset()) -> Callable[[Reply], Stats]:
    def decode(reply: Reply) -> Stats:
        _expect(reply, "OK", 1)
        return parse_yaml_dict(reply.body or b"", text_keys)

    return decode


def _list(reply: Reply) -> list[str]:
    _expect(reply, "OK", 1)
    return parse_yaml_list(reply.body or b"")


def _room(inside: str) -> Callable[[Reply], RoomStatus]:
    def decode(reply: Reply) -> RoomStatus:
        if reply.word == "WAITING" and len(reply.args) == 2:
            return RoomStatus(RoomState.WAITING, int(reply.args[0]), int(reply.args[1]))
        _expect(reply, inside)
        return RoomStatus(RoomState(inside))

    return decode


def _raw(reply: Reply) -> Reply:
    if reply.word in ERRORS:
        raise error_for(reply)
    return reply


def only(outcomes: list[Outcome]) -> Any:
    """The combine step of a single command: its result, or raise its error."""
    (outcome,) = outcomes
    if isinstance(outcome, RedstalkError):
        raise outcome
    return outcome


def _not_found(ids: Sequence[int]) -> Callable[[list[Outcome]], list[int]]:
    def combine(outcomes: list[Outcome]) -> list[int]:
        missing = []
        for job_id, outcome in zip(ids, outcomes):
            if isinstance(outcome, NotFound):
                missing.append(job_id)
            elif isinstance(outcome, RedstalkError):
                raise outcome
        return missing

    return combine


_NAME = re.compile(r"[!-~]+")


def _name(name: str) -> bytes:
    # Only what would break the framing is refused here; the server judges the rest (BAD_FORMAT).
    if not _NAME.fullmatch(name):
        raise ValueError(f"a name is printable ASCII without spaces: {name!r}")
    return name.encode("ascii")


# A command line is at most 224 bytes with its CRLF: "auth " + token + CRLF.
MAX_TOKEN = 224 - len("auth ") - len(CRLF)
_TOKEN = re.compile(r"[!-~]{1,%d}" % MAX_TOKEN)


def _token(token: str) -> bytes:
    # The message leaves the token out: it is a secret.
    if not isinstance(token, str) or not _TOKEN.fullmatch(token):
        raise ValueError(f"an auth token is 1 to {MAX_TOKEN} printable ASCII characters without spaces")
    return token.encode("ascii")


def _line(word: str, *args: bytes | int) -> bytes:
    """A command line: args are names checked by _name, or integers (a str is refused)."""
    return b" ".join([word.encode(), *(a if isinstance(a, bytes) else b"%d" % operator.index(a) for a in args)])


class Commands:
    """Every command, for any client that implements _call_many."""

    def _call_many(self, requests: list[Request[Any]], combine: Callable[[list[Outcome]], Any]) -> Any:
        """Send the requests at once, read their replies in order, return combine(outcomes)."""
        raise NotImplementedError

    def _call(self, request: Request[T]) -> T:
        return self._call_many([request], only)

    # Producer

    def put(self, body: bytes | str, priority: int = DEFAULT_PRIORITY, delay: int = 0, ttr: int = DEFAULT_TTR) -> int:
        """Insert a job into the used tube; returns its id. Raises Buried(id), JobTooBig, Draining."""
        data = body.encode() if isinstance(body, str) else bytes(body)
        # A put line answered BAD_FORMAT leaves its body to be read as commands: never send one.
        if not all(0 <= operator.index(n) <= U32_MAX for n in (priority, delay, ttr, len(data))):
            raise ValueError("put: priority, delay, ttr and the body's length are 32-bit unsigned")
        return self._call(Request(_line("put", priority, delay, ttr, len(data)), _number("INSERTED"), data))

    def use(self, tube: str) -> str:
        return self._call(Request(_line("use", _name(tube)), _text("USING")))

    # Worker

    def reserve(self, timeout: int | None = None) -> Job:
        """Wait for a job from the watched tubes (at most `timeout` seconds: TimedOut).
        Raises DeadlineSoon when a job this connection holds is about to time out."""
        if timeout is None:
            return self._call(Request(b"reserve", _job("RESERVED"), wait=None))
        return self._call(Request(_line("reserve-with-timeout", timeout), _job("RESERVED"), wait=timeout))

    def reserve_many(self, count: int, timeout: int) -> list[Job]:
        """Reserve up to `count` jobs at once (redstalk's reserve-many); each job's TTR starts now."""
        return self._call(Request(_line("reserve-many", count, timeout), _jobs, wait=timeout))

    def reserve_job(self, job_id: int) -> Job:
        return self._call(Request(_line("reserve-job", job_id), _job("RESERVED")))

    def delete(self, job_id: int) -> None:
        return self._call(Request(_line("delete", job_id), _none("DELETED")))

    def delete_many(self, ids: Sequence[int]) -> list[int]:
        """Delete jobs in one round trip (all deletes sent, then the replies read in order).
        Returns the ids answered NOT_FOUND; any other error is raised once all are read."""
        requests = [Request(_line("delete", job_id), _none("DELETED")) for job_id in ids]
        return self._call_many(requests, _not_found(list(ids)))

    def release(self, job_id: int, priority: int = DEFAULT_PRIORITY, delay: int = 0) -> None:
        return self._call(Request(_line("release", job_id, priority, delay), _none("RELEASED", job_id)))

    def bury(self, job_id: int, priority: int = DEFAULT_PRIORITY) -> None:
        return self._call(Request(_line("bury", job_id, priority), _none("BURIED")))

    def touch(self, job_id: int) -> None:
        return self._call(Request(_line("touch", job_id), _none("TOUCHED")))

    def watch(self, tube: str) -> int:
        """Returns how many tubes are watched now."""
        return self._call(Request(_line("watch", _name(tube)), _number("WATCHING")))

    def ignore(self, tube: str) -> int:
        """Returns how many tubes are watched now; NotIgnored for the last one."""
        return self._call(Request(_line("ignore", _name(tube)), _number("WATCHING")))

    # Other

    def peek(self, job_id: int) -> Job:
        return self._call(Request(_line("peek", job_id), _job("FOUND")))

    def peek_ready(self) -> Job:
        return self._call(Request(b"peek-ready", _job("FOUND")))

    def peek_delayed(self) -> Job:
        return self._call(Request(b"peek-delayed", _job("FOUND")))

    def peek_buried(self) -> Job:
        return self._call(Request(b"peek-buried", _job("FOUND")))

    def kick(self, bound: int) -> int:
        """Kick up to `bound` buried (else delayed) jobs of the used tube; returns how many."""
        return self._call(Request(_line("kick", bound), _number("KICKED")))

    def kick_job(self, job_id: int) -> None:
        return self._call(Request(_line("kick-job", job_id), _none("KICKED")))

    def stats_job(self, job_id: int) -> Stats:
        return self._call(Request(_line("stats-job", job_id), _stats()))

    def stats_tube(self, tube: str) -> Stats:
        return self._call(Request(_line("stats-tube", _name(tube)), _stats()))

    def stats(self) -> Stats:
        # `id` is the server's id: hex digits that may look like a number.
        return self._call(Request(b"stats", _stats(frozenset({"id"}))))

    def list_tubes(self) -> list[str]:
        return self._call(Request(b"list-tubes", _list))

    def list_tube_used(self) -> str:
        return self._call(Request(b"list-tube-used", _text("USING")))

    def list_tubes_watched(self) -> list[str]:
        return self._call(Request(b"list-tubes-watched", _list))

    def pause_tube(self, tube: str, delay: int) -> None:
        return self._call(Request(_line("pause-tube", _name(tube), delay), _none("PAUSED")))

    # Waiting rooms (redstalk extension)

    def enter(self, room: str, user: str) -> RoomStatus:
        """ENTERED, or WAITING with a position and an estimated wait."""
        return self._call(Request(_line("enter", _name(room), _name(user)), _room("ENTERED")))

    def check(self, room: str, user: str) -> RoomStatus:
        """READY (may enter now), or WAITING; a check-in either way."""
        return self._call(Request(_line("check", _name(room), _name(user)), _room("READY")))

    def leave(self, room: str, user: str) -> None:
        return self._call(Request(_line("leave", _name(room), _name(user)), _none("LEFT")))

    def room_config(self, room: str, capacity: int, checkin_timeout: int, participant_timeout: int, grace: int) -> None:
        line = _line("room-config", _name(room), capacity, checkin_timeout, participant_timeout, grace)
        return self._call(Request(line, _none("OK")))

    def room_rate(self, room: str, per_minute: int) -> None:
        return self._call(Request(_line("room-rate", _name(room), per_minute), _none("OK")))

    def pause_room(self, room: str, paused: bool) -> None:
        return self._call(Request(_line("pause-room", _name(room), int(paused)), _none("OK")))

    def room_lottery(self, room: str, seconds: int) -> None:
        return self._call(Request(_line("room-lottery", _name(room), seconds), _none("OK")))

    def stats_room(self, room: str) -> Stats:
        return self._call(Request(_line("stats-room", _name(room)), _stats()))

    def list_rooms(self) -> list[str]:
        return self._call(Request(b"list-rooms", _list))

    # Authentication (redstalk extension)

    def auth(self, token: str) -> None:
        """Give the server's token (`--auth-token`); until then a server that has one answers
        every command Unauthorized. Raises Unauthorized for a wrong token; the server closes
        the connection after three. A server without a token accepts any."""
        return self._call(Request(_line("auth", _token(token)), _none("OK")))

    # Anything else

    def command(self, line: str | bytes, body: bytes | None = None) -> Reply:
        """Send one command line (without CRLF; `body` follows it) and return the reply as
        read, for commands this client has no method for. The error words still raise."""
        data = line.encode("latin-1") if isinstance(line, str) else line
        if b"\r" in data or b"\n" in data:
            raise ValueError("a command line has no CR or LF")
        return self._call(Request(data, _raw, body, wait=None))


class Pipeline(Commands):
    """Queues commands; execute() sends them at once and returns their results in order,
    with the exception instance in place of a failed command's result."""

    def __init__(self, client: Commands) -> None:
        self._client = client
        self._groups: list[tuple[list[Request[Any]], Callable[[list[Outcome]], Any]]] = []

    def _call_many(self, requests: list[Request[Any]], combine: Callable[[list[Outcome]], Any]) -> None:
        self._groups.append((requests, combine))

    def __len__(self) -> int:
        return len(self._groups)

    def execute(self) -> Any:
        """list of results (Client), or a coroutine of it (AsyncClient). Empties the pipeline."""
        groups, self._groups = self._groups, []
        return self._client._call_many([r for requests, _ in groups for r in requests], _split(groups))


def _split(groups: list[tuple[list[Request[Any]], Callable[[list[Outcome]], Any]]]) -> Callable[[list[Outcome]], list[Outcome]]:
    def combine(outcomes: list[Outcome]) -> list[Outcome]:
        results, at = [], 0
        for requests, group_combine in groups:
            try:
                results.append(group_combine(outcomes[at : at + len(requests)]))
            except RedstalkError as err:
                results.append(err)
            at += len(requests)
        return results

    return combine
