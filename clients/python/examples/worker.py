"""A worker for the `emails` tube: python3 examples/worker.py [HOST [PORT]]
(with $REDSTALK_AUTH_TOKEN set, it authenticates with that token first)

Each job's body is an address; "sending" takes half a second and fails for addresses
without an @ (retried with backoff, buried after 3 attempts). SIGTERM or Ctrl-C stops it
gracefully: the jobs being sent are finished, the prefetched ones handed back.
"""

import logging
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

from redstalk import Job, Worker


def send_email(job: Job) -> None:
    address = job.body.decode()
    if "@" not in address:
        raise ValueError(f"not an address: {address!r}")
    time.sleep(0.5)
    print(f"sent job {job.id} to {address}", flush=True)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    host = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1"
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 11300
    token = os.environ.get("REDSTALK_AUTH_TOKEN") or None
    worker = Worker(
        send_email, host=host, port=port, tubes=["emails"], prefetch=8, concurrency=2, max_attempts=3, auth_token=token
    )
    print("worker ready", flush=True)
    worker.run()
    print("worker stopped", flush=True)
