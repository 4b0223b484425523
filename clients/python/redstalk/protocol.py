"""The wire format, without I/O: framing replies out of a byte stream, and beanstalkd's YAML.

Both clients (sync and asyncio) and the transcript tests read replies through ReplyReader.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .errors import UnexpectedReply

CRLF = b"\r\n"

Scalar = int | float | bool | str

_DIGITS = re.compile(r"[0-9]+")
_DECIMAL = re.compile(r"[0-9]+\.[0-9]+")


@dataclass(frozen=True)
class Reply:
    """One whole reply: its line split into word and args, its body if it has one,
    the RESERVED blocks of a RESERVED-MANY, and the exact bytes it took on the wire."""

    word: str
    args: tuple[str, ...] = ()
    body: bytes | None = None
    jobs: tuple[Reply, ...] = ()
    raw: bytes = field(default=b"", repr=False)

    @property
    def line(self) -> str:
        return " ".join((self.word, *self.args))


def _has_body(word: str, args: list[str]) -> bool:
    # The body's length is the last argument: RESERVED <id> <bytes>, FOUND <id> <bytes>, OK <bytes>.
    # A bare OK (the room settings commands) has none.
    return (word in ("RESERVED", "FOUND") and len(args) == 2) or (word == "OK" and len(args) == 1)


def _count(text: str, line: str) -> int:
    if not _DIGITS.fullmatch(text):
        raise UnexpectedReply(f"bad count in reply {line!r}")
    return int(text)


def _parse(buf: bytearray, pos: int) -> tuple[Reply, int] | None:
    """The reply starting at pos and where it ends, or None while it is incomplete."""
    eol = buf.find(CRLF, pos)
    if eol < 0:
        return None
    line = buf[pos:eol].decode("latin-1")
    word, *args = line.split(" ")
    end = eol + 2
    body = None
    jobs: list[Reply] = []
    if word == "RESERVED-MANY" and len(args) == 1:
        for _ in range(_count(args[0], line)):
            parsed = _parse(buf, end)
            if parsed is None:
                return None
            job, end = parsed
            if job.word != "RESERVED" or job.body is None:
                raise UnexpectedReply(f"RESERVED-MANY block is {job.line!r}")
            jobs.append(job)
    elif _has_body(word, args):
        size = _count(args[-1], line)
        if len(buf) < end + size + 2:
            return None
        body = bytes(buf[end : end + size])
        if buf[end + size : end + size + 2] != CRLF:
            raise UnexpectedReply(f"body of {line!r} is not followed by CRLF")
        end += size + 2
    return Reply(word, tuple(args), body, tuple(jobs), bytes(buf[pos:end])), end


class ReplyReader:
    """Feed it bytes as they arrive; pop() returns each whole reply once it is buffered."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> None:
        self._buf += data

    def pop(self) -> Reply | None:
        parsed = _parse(self._buf, 0)
        if parsed is None:
            return None
        reply, end = parsed
        del self._buf[:end]
        return reply


def _scalar(text: str) -> Scalar:
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    if _DIGITS.fullmatch(text):
        return int(text)
    if _DECIMAL.fullmatch(text):
        return float(text)
    return text


def _yaml_lines(body: bytes) -> list[str]:
    text = body.decode("utf-8", errors="replace")
    lines = text.split("\n")
    if lines[0] != "---":
        raise UnexpectedReply(f"YAML document does not start with '---': {text[:40]!r}")
    return [line for line in lines[1:] if line]


def parse_yaml_dict(body: bytes, text_keys: frozenset[str] = frozenset()) -> dict[str, Scalar]:
    """beanstalkd's flat `key: value` YAML; quoted values unquoted, numbers and booleans
    converted, except for text_keys (values that only look like numbers)."""
    result: dict[str, Scalar] = {}
    for line in _yaml_lines(body):
        key, sep, value = line.partition(": ")
        if not sep:
            raise UnexpectedReply(f"YAML line is not 'key: value': {line!r}")
        result[key] = value if key in text_keys else _scalar(value)
    return result


def parse_yaml_list(body: bytes) -> list[str]:
    """beanstalkd's `- item` YAML list (tube or room names: kept as text)."""
    items = []
    for line in _yaml_lines(body):
        if not line.startswith("- "):
            raise UnexpectedReply(f"YAML line is not '- item': {line!r}")
        item = line[2:]
        items.append(item[1:-1] if len(item) >= 2 and item[0] == item[-1] == '"' else item)
    return items
