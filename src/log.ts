// The one logger factory: JSON lines on stdout (pino). Errors from ioredis
// carry the command and its arguments (a job body, for a put); the error
// serializer drops them so a body never reaches a log.
import { pino, stdSerializers, type Logger } from 'pino';

export function serializeError(err: unknown): object {
  const out = stdSerializers.err(err as Error) as unknown as Record<string, unknown>;
  delete out.command;
  delete out.args;
  return out;
}

export function createLogger(level: string): Logger {
  return pino({ level, serializers: { err: serializeError } });
}
