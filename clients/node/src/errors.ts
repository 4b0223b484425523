// One error class per protocol error word, so callers can `catch` by type
// (`err instanceof NotFoundError`) or by `err.code` (the word on the wire).
import type { Reply } from './reader.js';

/** A reply the server sent instead of the success the command asked for. */
export class RedstalkError extends Error {
  override name = 'RedstalkError';
  /** The reply line, e.g. `NOT_FOUND` or `BURIED 12`. */
  readonly reply: string;

  constructor(readonly code: string, reply: string, message = reply) {
    super(message);
    this.reply = reply;
  }
}

export class BadFormatError extends RedstalkError {
  override name = 'BadFormatError';
  declare readonly code: 'BAD_FORMAT';
  constructor(reply = 'BAD_FORMAT') { super('BAD_FORMAT', reply, `${reply}: the command was malformed, or an argument out of range`); }
}

export class UnknownCommandError extends RedstalkError {
  override name = 'UnknownCommandError';
  declare readonly code: 'UNKNOWN_COMMAND';
  constructor(reply = 'UNKNOWN_COMMAND') { super('UNKNOWN_COMMAND', reply, `${reply}: the server does not know this command`); }
}

export class OutOfMemoryError extends RedstalkError {
  override name = 'OutOfMemoryError';
  declare readonly code: 'OUT_OF_MEMORY';
  constructor(reply = 'OUT_OF_MEMORY') { super('OUT_OF_MEMORY', reply, `${reply}: the server could not store it (Redis maxmemory)`); }
}

export class InternalError extends RedstalkError {
  override name = 'InternalError';
  declare readonly code: 'INTERNAL_ERROR';
  constructor(reply = 'INTERNAL_ERROR') { super('INTERNAL_ERROR', reply, `${reply}: the server failed (Redis unreachable or too slow); the effect is unknown`); }
}

export class DrainingError extends RedstalkError {
  override name = 'DrainingError';
  declare readonly code: 'DRAINING';
  constructor(reply = 'DRAINING') { super('DRAINING', reply, `${reply}: the server is in drain mode and takes no new jobs`); }
}

export class NotFoundError extends RedstalkError {
  override name = 'NotFoundError';
  declare readonly code: 'NOT_FOUND';
  constructor(reply = 'NOT_FOUND') { super('NOT_FOUND', reply, `${reply}: no such job, tube or room, or the job is not reserved by this connection`); }
}

export class NotIgnoredError extends RedstalkError {
  override name = 'NotIgnoredError';
  declare readonly code: 'NOT_IGNORED';
  constructor(reply = 'NOT_IGNORED') { super('NOT_IGNORED', reply, `${reply}: a connection must watch at least one tube`); }
}

export class JobTooBigError extends RedstalkError {
  override name = 'JobTooBigError';
  declare readonly code: 'JOB_TOO_BIG';
  constructor(reply = 'JOB_TOO_BIG') { super('JOB_TOO_BIG', reply, `${reply}: the body is larger than the server's max-job-size`); }
}

export class ExpectedCrlfError extends RedstalkError {
  override name = 'ExpectedCrlfError';
  declare readonly code: 'EXPECTED_CRLF';
  constructor(reply = 'EXPECTED_CRLF') { super('EXPECTED_CRLF', reply, `${reply}: the job body was not followed by CRLF`); }
}

export class DeadlineSoonError extends RedstalkError {
  override name = 'DeadlineSoonError';
  declare readonly code: 'DEADLINE_SOON';
  constructor(reply = 'DEADLINE_SOON') { super('DEADLINE_SOON', reply, `${reply}: a job reserved by this connection is within a second of its TTR`); }
}

export class TimedOutError extends RedstalkError {
  override name = 'TimedOutError';
  declare readonly code: 'TIMED_OUT';
  constructor(reply = 'TIMED_OUT') { super('TIMED_OUT', reply, `${reply}: no job became ready within the timeout`); }
}

/** A token is required first (`auth`), or the token given was wrong. */
export class UnauthorizedError extends RedstalkError {
  override name = 'UnauthorizedError';
  declare readonly code: 'UNAUTHORIZED';
  constructor(reply = 'UNAUTHORIZED') { super('UNAUTHORIZED', reply, `${reply}: send the server's token with auth first`); }
}

/** `put` or `release` buried the job instead (the server could not queue it). */
export class BuriedError extends RedstalkError {
  override name = 'BuriedError';
  declare readonly code: 'BURIED';
  /** The buried job's id when the server names it (`put`: `BURIED <id>`). */
  readonly id: number | undefined;
  constructor(reply = 'BURIED') {
    super('BURIED', reply, `${reply}: the job was buried instead`);
    const id = reply.split(' ')[1];
    this.id = id === undefined ? undefined : Number(id);
  }
}

/** A reply this client does not expect for the command (a server newer than the client, or a bug). */
export class UnexpectedReplyError extends RedstalkError {
  override name = 'UnexpectedReplyError';
  constructor(reply: Reply, command: string) {
    super(reply.word, reply.line, `unexpected reply to ${command}: ${reply.line}`);
  }
}

/** The connection failed, closed, or could not be made: the command's outcome is unknown. */
export class ConnectionError extends Error {
  override name = 'ConnectionError';
}

/** Every error word, by the word on the wire. */
export const ERROR_CLASSES = {
  BAD_FORMAT: BadFormatError,
  UNKNOWN_COMMAND: UnknownCommandError,
  OUT_OF_MEMORY: OutOfMemoryError,
  INTERNAL_ERROR: InternalError,
  DRAINING: DrainingError,
  NOT_FOUND: NotFoundError,
  NOT_IGNORED: NotIgnoredError,
  JOB_TOO_BIG: JobTooBigError,
  EXPECTED_CRLF: ExpectedCrlfError,
  DEADLINE_SOON: DeadlineSoonError,
  TIMED_OUT: TimedOutError,
  BURIED: BuriedError,
  UNAUTHORIZED: UnauthorizedError,
} as const;

/** The error a reply stands for; an UnexpectedReplyError for a word that is no error. */
export function errorFor(reply: Reply, command: string): RedstalkError {
  const cls = (ERROR_CLASSES as Record<string, new (reply: string) => RedstalkError>)[reply.word];
  return cls ? new cls(reply.line) : new UnexpectedReplyError(reply, command);
}
