"""A worker for the cross-language test: python3 worker.py HOST PORT TUBE

Prints `done <id> <body>` for every job its handler runs, with redstalk's
Python Worker (prefetch via reserve-many, several threads). Stops on SIGTERM."""

import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "clients" / "python"))

from redstalk import Job, Worker  # noqa: E402


_out = threading.Lock()


def handle(job: Job) -> None:
    # One write per line: print() from several handler threads interleaves its text and newline.
    with _out:
        sys.stdout.write(f"done {job.id} {job.body.decode()}\n")
        sys.stdout.flush()


if __name__ == "__main__":
    host, port, tube = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    Worker(handle, host=host, port=port, tubes=[tube], prefetch=16, concurrency=4).run()
