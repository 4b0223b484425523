"""Replays every protocol/transcripts/*.txt scenario, each on a fresh sidecar over one new
connection, through the client's low-level reply reader (Connection.read_reply)."""

from __future__ import annotations

import re
import unittest
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from redstalk import Connection
from redstalk.errors import RedstalkError

from .servers import HOST, ROOT, Sidecar

TRANSCRIPTS = ROOT / "protocol" / "transcripts"
REPLY_TIMEOUT = 3.0
PARALLEL = 4  # sidecars at once: starting one is CPU-bound, replaying mostly waits

_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|[rnt0\\])")
_SIMPLE = {"r": "\r", "n": "\n", "t": "\t", "0": "\0", "\\": "\\"}


def unescape(text: str) -> bytes:
    def one(m: re.Match[str]) -> str:
        code = m.group(1)
        return chr(int(code[1:], 16)) if code[0] == "x" else _SIMPLE[code]

    return _ESCAPE.sub(one, text).encode("latin-1")


def reply_pattern(text: str) -> re.Pattern[bytes]:
    """An S: line as a regex: `{*}` is any run of bytes other than CR and LF."""
    return re.compile(b"[^\r\n]*".join(re.escape(unescape(part)) for part in text.split("{*}")), re.DOTALL)


@dataclass
class Step:
    send: bytes
    replies: list[str] = field(default_factory=list)


@dataclass
class Scenario:
    source: str
    name: str
    steps: list[Step] = field(default_factory=list)


def load(path: Path) -> list[Scenario]:
    scenarios: list[Scenario] = []
    for number, line in enumerate(path.read_text(encoding="latin-1").splitlines(), 1):
        if line.startswith("=== "):
            scenarios.append(Scenario(path.name, line[4:]))
        elif line.startswith("C: "):
            scenarios[-1].steps.append(Step(unescape(line[3:])))
        elif line.startswith("S: "):
            scenarios[-1].steps[-1].replies.append(line[3:])
        elif line and not line.startswith("#"):
            raise ValueError(f"{path.name}:{number}: not a transcript line: {line[:60]!r}")
    return scenarios


def replay(scenario: Scenario, port: int) -> str | None:
    """None when every reply matched, else what differed."""
    conn = Connection(HOST, port, connect_timeout=5)
    try:
        for step in scenario.steps:
            conn.send(step.send)
            for expected in step.replies:
                try:
                    actual = conn.read_reply(REPLY_TIMEOUT).raw
                except (TimeoutError, RedstalkError) as err:
                    actual = f"<{type(err).__name__}: {err}>".encode()
                if not reply_pattern(expected).fullmatch(actual):
                    return (
                        f"{scenario.source}: {scenario.name}\n  request:  {_show(step.send)}\n"
                        f"  expected: {expected}\n  actual:   {_show(actual)}"
                    )
        return None
    finally:
        conn.close()


def _show(data: bytes, limit: int = 400) -> str:
    text = data.decode("latin-1").encode("unicode_escape").decode("ascii")
    return text if len(text) <= limit else f"{text[:limit]}... ({len(data)} bytes)"


def run_on_fresh_sidecar(scenario: Scenario) -> str | None:
    with Sidecar() as server:
        return replay(scenario, server.port)


class TranscriptTest(unittest.TestCase):
    def test_unescape_and_wildcards(self) -> None:
        self.assertEqual(unescape(r"a\r\n\t\0\\\x7f\xff"), b"a\r\n\t\0\\\x7f\xff")
        self.assertTrue(reply_pattern(r"OK {*}\r\n---\nage: {*}\n\r\n").fullmatch(b"OK 12\r\n---\nage: 3\n\r\n"))
        self.assertFalse(reply_pattern(r"WAITING 1 {*}\r\n").fullmatch(b"WAITING 1 3\r\nX\r\n"))

    def test_every_scenario(self) -> None:
        files = sorted(TRANSCRIPTS.glob("*.txt"))
        self.assertTrue(files, f"no transcripts in {TRANSCRIPTS}")
        scenarios = [s for f in files for s in load(f)]
        pool = ThreadPoolExecutor(PARALLEL)
        try:
            for scenario, failure in zip(scenarios, pool.map(run_on_fresh_sidecar, scenarios)):
                with self.subTest(f"{scenario.source}: {scenario.name}"):
                    self.assertIsNone(failure, failure)
        finally:
            pool.shutdown(cancel_futures=True)  # interrupted: start no more sidecars
