"""The wire format without a server: reply framing, YAML, argument checks, backoff, and
replies redstalk never sends (BURIED from put/release) through a scripted fake server."""

from __future__ import annotations

import random
import unittest

from redstalk import (
    Buried,
    Client,
    NotFound,
    ReplyReader,
    UnexpectedReply,
    backoff_delay,
    parse_yaml_dict,
    parse_yaml_list,
)

from .fakes import HOST, FakeServer


def read_all(data: bytes, chunk: int = 1) -> list:
    """Every reply in data, fed `chunk` bytes at a time."""
    reader, replies = ReplyReader(), []
    for i in range(0, len(data), chunk):
        reader.feed(data[i : i + chunk])
        while (reply := reader.pop()) is not None:
            replies.append(reply)
    return replies


class ReplyReaderTest(unittest.TestCase):
    STREAM = (
        b"INSERTED 1\r\n"
        b"RESERVED 1 7\r\na\r\nb\0\xff\r\r\n"
        b"FOUND 2 0\r\n\r\n"
        b"OK 14\r\n---\n- default\n\r\n"
        b"OK\r\n"
        b"RESERVED-MANY 2\r\nRESERVED 3 1\r\nx\r\nRESERVED 4 2\r\nyz\r\n"
        b"RESERVED-MANY 0\r\n"
        b"WAITING 3 40\r\n"
        b"DUPLICATE 5\r\n"
    )

    def test_frames_every_reply_kind_however_the_bytes_arrive(self) -> None:
        for chunk in (1, 2, 5, len(self.STREAM)):
            replies = read_all(self.STREAM, chunk)
            self.assertEqual(
                [r.line for r in replies],
                [
                    "INSERTED 1", "RESERVED 1 7", "FOUND 2 0", "OK 14", "OK", "RESERVED-MANY 2", "RESERVED-MANY 0",
                    "WAITING 3 40", "DUPLICATE 5",
                ],
            )
            self.assertEqual(b"".join(r.raw for r in replies), self.STREAM)
            self.assertEqual(replies[1].body, b"a\r\nb\0\xff\r")
            self.assertEqual(replies[2].body, b"")
            self.assertIsNone(replies[4].body)
            self.assertEqual([(j.args, j.body) for j in replies[5].jobs], [(("3", "1"), b"x"), (("4", "2"), b"yz")])
            self.assertEqual(replies[7].args, ("3", "40"))
            self.assertEqual((replies[8].word, replies[8].args, replies[8].body), ("DUPLICATE", ("5",), None))

    def test_incomplete_reply_waits(self) -> None:
        reader = ReplyReader()
        reader.feed(b"RESERVED-MANY 2\r\nRESERVED 3 1\r\nx\r\nRESERVED 4 2\r\ny")
        self.assertIsNone(reader.pop())
        reader.feed(b"z\r\n")
        self.assertEqual(len(reader.pop().jobs), 2)

    def test_broken_framing_is_unexpected(self) -> None:
        for data in (b"FOUND 1 2\r\nabcd\r\n", b"OK x\r\n", b"RESERVED-MANY 1\r\nTIMED_OUT\r\n"):
            with self.subTest(data=data), self.assertRaises(UnexpectedReply):
                read_all(data, len(data))


class YamlTest(unittest.TestCase):
    def test_dict_values(self) -> None:
        doc = b'---\nname: "q"\ncount: 12\nrate: 3.000\npaused: false\nstate: ready\nid: 0123\n'
        self.assertEqual(
            parse_yaml_dict(doc),
            {"name": "q", "count": 12, "rate": 3.0, "paused": False, "state": "ready", "id": 123},
        )
        self.assertEqual(parse_yaml_dict(doc, frozenset({"id"}))["id"], "0123")

    def test_lists(self) -> None:
        self.assertEqual(parse_yaml_list(b"---\n- default\n- 123\n- \"q\"\n"), ["default", "123", "q"])
        self.assertEqual(parse_yaml_list(b"---\n"), [])

    def test_not_yaml(self) -> None:
        for bad in (b"- a\n", b"---\nkey value\n"):
            with self.subTest(bad=bad), self.assertRaises(UnexpectedReply):
                parse_yaml_dict(bad)


class BackoffTest(unittest.TestCase):
    def test_doubles_with_jitter_up_to_the_cap(self) -> None:
        rng = random.Random(1)
        for releases, low, high in ((0, 1, 2), (1, 1, 2), (2, 2, 4), (3, 4, 8), (10, 30, 60), (5000, 30, 60)):
            for _ in range(50):
                self.assertTrue(low <= backoff_delay(releases, 1.0, 60.0, rng) <= high, releases)
        self.assertEqual(backoff_delay(3, 0.0, 60.0), 0)


class FakeServerTest(unittest.TestCase):
    def test_buried_carries_the_job_id(self) -> None:
        server = FakeServer([b"BURIED 7\r\n", b"BURIED\r\n", b"BURIED\r\n"])
        with Client(HOST, server.port) as client:
            with self.assertRaises(Buried) as put:
                client.put(b"body")
            self.assertEqual(put.exception.job_id, 7)
            with self.assertRaises(Buried) as release:
                client.release(9)
            self.assertEqual(release.exception.job_id, 9)
            self.assertIsNone(client.bury(9))  # the success reply of bury
        server.close()
        self.assertEqual(server.commands, [b"put 1024 0 60 4\r\nbody\r\n", b"release 9 1024 0\r\n", b"bury 9 1024\r\n"])

    def test_unknown_reply_word(self) -> None:
        server = FakeServer([b"SURPRISE\r\n", b"NOT_FOUND\r\n"])
        with Client(HOST, server.port) as client:
            with self.assertRaises(UnexpectedReply):
                client.delete(1)
            with self.assertRaises(NotFound):  # still in step: the reply was framed, only unknown
                client.delete(1)
        server.close()


class ArgumentTest(unittest.TestCase):
    def test_names_and_numbers_cannot_break_the_framing(self) -> None:
        server = FakeServer([])
        with Client(HOST, server.port) as client:
            for bad in ("a b", "a\r\nstats", "", "caf\u00e9"):
                with self.subTest(name=bad), self.assertRaises(ValueError):
                    client.use(bad)
            with self.assertRaises(TypeError):
                client.delete("1\r\nstats")  # type: ignore[arg-type]
            with self.assertRaises(ValueError):
                client.command("stats\r\nstats")
        server.close()
