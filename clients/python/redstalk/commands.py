"""Every command of redstalk, written once.

A command method builds a Request (the bytes to send and how to decode the reply) and hands
it to `_call_many`, which each client implements: Client runs it and returns the result,
AsyncClient returns a coroutine of the result, Pipeline queues it. So `client.put(b"x")`,
`await aclient.put(b"x")` and `pipeline.put(b"x")` share this one definition.
"""

from __future__ import annotations

import operator
import re
import secrets
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
class PutResult:
    id: int
    duplicate: bool  # DUPLICATE: nothing stored, `id` is the job first put with this key


@dataclass(frozen=True)
class Request(Generic[T]):
    line: bytes
    decode: Callable[[Reply], T]
    body: bytes | None = None
    wait: float | None = 0.0  # how long the server may rightly hold the reply back; None: forever
    retry: bool = False  # safe to send again when its reply is lost (a put-with with a key)
    remember: Callable[[Session], None] | None = None  # what its success sets on the connection

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


def _put_result(reply: Reply) -> PutResult:
    if reply.word in ("INSERTED", "DUPLICATE") and len(reply.args) == 1:
        return PutResult(int(reply.args[0]), reply.word == "DUPLICATE")
    raise error_for(reply)


def _put_id(reply: Reply) -> int:
    return _put_result(reply).id


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


_KEY = re.compile(r"[!-~]{1,128}")
_ON_EXPIRY = ("delete", "bury")


def _key(key: str | None) -> bytes:
    if key is None:
        return b"-"
    # "-" is no key on the wire: a job put with it could be stored twice by a retry.
    if not isinstance(key, str) or key == "-" or not _KEY.fullmatch(key):
        raise ValueError(f"a put key is 1 to 128 printable ASCII characters without spaces, not '-': {key!r}")
    return key.encode("ascii")


def _job_data(body: bytes | str, *numbers: int) -> bytes:
    data = body.encode() if isinstance(body, str) else bytes(body)
    # A put line answered BAD_FORMAT leaves its body to be read as commands: never send one.
    if not all(0 <= operator.index(n) <= U32_MAX for n in (*numbers, len(data))):
        raise ValueError("put: priority, delay, ttr, expire and the body's length are 32-bit unsigned")
    return data


def _put_with(
    body: bytes | str, key: str | None, expire: int, on_expiry: str, priority: int, delay: int, ttr: int,
    decode: Callable[[Reply], T],
) -> Request[T]:
    if on_expiry not in _ON_EXPIRY:
        raise ValueError(f"on_expiry is 'delete' or 'bury', not {on_expiry!r}")
    data = _job_data(body, expire, priority, delay, ttr)
    line = _line("put-with", _key(key), expire, on_expiry.encode(), priority, delay, ttr, len(data))
    return Request(line, decode, data, retry=key is not None)


def _line(word: str, *args: bytes | int) -> bytes:
    """A command line: args are names checked by _name, or integers (a str is refused)."""
    return b" ".join([word.encode(), *(a if isinstance(a, bytes) else b"%d" % operator.index(a) for a in args)])


class Commands:
    """Every command, for any client that implements _call_many."""

    idempotent = False  # a client's option: every put without a key of its own gets a random one

    def _call_many(self, requests: list[Request[Any]], combine: Callable[[list[Outcome]], Any]) -> Any:
        """Send the requests at once, read their replies in order, return combine(outcomes)."""
        raise NotImplementedError

    def _call(self, request: Request[T]) -> T:
        return self._call_many([request], only)

    # Producer

    def put(self, body: bytes | str, priority: int = DEFAULT_PRIORITY, delay: int = 0, ttr: int = DEFAULT_TTR) -> int:
        """Insert a job into the used tube; returns its id. Raises Buried(id), JobTooBig, Draining.
        On an idempotent client: a put-with with a random key, sent again if its reply is lost."""
        if self.idempotent:
            return self._call(_put_with(body, _random_key(), 0, "delete", priority, delay, ttr, _put_id))
        data = _job_data(body, priority, delay, ttr)
        return self._call(Request(_line("put", priority, delay, ttr, len(data)), _number("INSERTED"), data))

    def put_with(
        self,
        body: bytes | str,
        key: str | None = None,
        *,
        expire: int = 0,
        on_expiry: str = "delete",
        priority: int = DEFAULT_PRIORITY,
        delay: int = 0,
        ttr: int = DEFAULT_TTR,
    ) -> PutResult:
        """redstalk's put-with: a put that a key makes safe to send again (the tube stores one
        job per key; a later put of the key answers DUPLICATE with that job's id), and a job
        deleted or buried (`on_expiry`) when no reserve took it `expire` seconds after its put
        (0: never). With a key (or on an idempotent client, which picks a random one), a lost
        reply is retried on a new connection. Raises JobTooBig, Draining."""
        if key is None and self.idempotent:
            key = _random_key()
        return self._call(_put_with(body, key, expire, on_expiry, priority, delay, ttr, _put_result))

    def use(self, tube: str) -> str:
        return self._call(Request(_line("use", _name(tube)), _text("USING"), remember=lambda s: s.use(tube)))

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
        return self._call(Request(_line("watch", _name(tube)), _number("WATCHING"), remember=lambda s: s.watch(tube)))

    def ignore(self, tube: str) -> int:
        """Returns how many tubes are watched now; NotIgnored for the last one."""
        return self._call(Request(_line("ignore", _name(tube)), _number("WATCHING"), remember=lambda s: s.ignore(tube)))

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

    def tube_set(self, tube: str, setting: str, value: int) -> None:
        """redstalk's tube-set: `max-reserved` (jobs reserved at once, 0: no cap), `reserve-rate`
        (reserves in any one second, 0: no cap) or `dedup-window` (seconds a deleted job's
        put key is remembered). BadFormat for another setting or a rate over 100000."""
        return self._call(Request(_line("tube-set", _name(tube), _name(setting), value), _none("OK")))

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
        return self._call(Request(_line("auth", _token(token)), _none("OK"), remember=lambda s: s.auth(token)))

    # Anything else

    def command(self, line: str | bytes, body: bytes | None = None) -> Reply:
        """Send one command line (without CRLF; `body` follows it) and return the reply as
        read, for commands this client has no method for. The error words still raise."""
        data = line.encode("latin-1") if isinstance(line, str) else line
        if b"\r" in data or b"\n" in data:
            raise ValueError("a command line has no CR or LF")
        return self._call(Request(data, _raw, body, wait=None))


def _random_key() -> str:
    return secrets.token_hex(16)  # 128 bits: no two puts meet by chance


class Session:
    """What a connection was told that a new one must be told again before a lost put is
    sent on it: the token, the used tube, the watched tubes (from the commands that succeeded)."""

    def __init__(self) -> None:
        self.token: str | None = None
        self.tube = "default"
        self.watched = ["default"]

    def auth(self, token: str) -> None:
        self.token = token

    def use(self, tube: str) -> None:
        self.tube = tube

    def watch(self, tube: str) -> None:
        if tube not in self.watched:
            self.watched.append(tube)

    def ignore(self, tube: str) -> None:
        if tube in self.watched:
            self.watched.remove(tube)

    def requests(self) -> list[Request[Any]]:
        """The commands that bring a new connection to this state."""
        replay = _Recorder()
        if self.token is not None:
            replay.auth(self.token)
        if self.tube != "default":
            replay.use(self.tube)
        for tube in self.watched:
            if tube != "default":
                replay.watch(tube)
        if "default" not in self.watched:
            replay.ignore("default")  # last: a connection always watches at least one tube
        return replay.requests


class _Recorder(Commands):
    def __init__(self) -> None:
        self.requests: list[Request[Any]] = []

    def _call_many(self, requests: list[Request[Any]], combine: Callable[[list[Outcome]], Any]) -> None:
        self.requests += requests


class Pipeline(Commands):
    """Queues commands; execute() sends them at once and returns their results in order,
    with the exception instance in place of a failed command's result."""

    def __init__(self, client: Commands) -> None:
        self._client = client
        self._groups: list[tuple[list[Request[Any]], Callable[[list[Outcome]], Any]]] = []

    def _call_many(self, requests: list[Request[Any]], combine: Callable[[list[Outcome]], Any]) -> None:
        self._groups.append((requests, combine))

    @property
    def idempotent(self) -> bool:  # type: ignore[override]
        return self._client.idempotent

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
