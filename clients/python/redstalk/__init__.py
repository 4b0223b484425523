"""redstalk: a client for redstalk (the beanstalkd protocol kept in Redis, plus waiting rooms)."""

from .aio import AsyncClient
from .client import DEFAULT_PORT, Client, Connection
from .commands import DEFAULT_PRIORITY, DEFAULT_TTR, Job, Pipeline, PutResult, RoomState, RoomStatus, Stats
from .errors import (
    BadFormat,
    Buried,
    ConnectionClosed,
    DeadlineSoon,
    Draining,
    ExpectedCrlf,
    InternalError,
    JobTooBig,
    NotFound,
    NotIgnored,
    OutOfMemory,
    RedstalkError,
    TimedOut,
    Unauthorized,
    UnexpectedReply,
    UnknownCommand,
)
from .protocol import Reply, ReplyReader, parse_yaml_dict, parse_yaml_list
from .retry import RetryPolicy
from .worker import Worker, backoff_delay

__version__ = "0.1.0"

__all__ = [
    "AsyncClient", "BadFormat", "Buried", "Client", "Connection", "ConnectionClosed", "DEFAULT_PORT",
    "DEFAULT_PRIORITY", "DEFAULT_TTR", "DeadlineSoon", "Draining", "ExpectedCrlf", "InternalError", "Job",
    "JobTooBig", "NotFound", "NotIgnored", "OutOfMemory", "Pipeline", "PutResult", "RedstalkError", "Reply",
    "ReplyReader", "RetryPolicy", "RoomState", "RoomStatus", "Stats", "TimedOut", "Unauthorized", "UnexpectedReply",
    "UnknownCommand", "Worker", "backoff_delay", "parse_yaml_dict", "parse_yaml_list",
]
