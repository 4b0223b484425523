// The one logger factory: JSON lines on stdout (pino), or pino-pretty's
// readable lines when asked or when stdout is a terminal. Errors from ioredis
// carry the command and its arguments (a job body, for a put); the error
// serializer drops them so a body never reaches a log.
import { createRequire } from 'node:module';
import { pino, stdSerializers, type DestinationStream, type Logger } from 'pino';

export type LogFormat = 'auto' | 'json' | 'pretty';

export function serializeError(err: unknown): object {
  const out = stdSerializers.err(err as Error) as unknown as Record<string, unknown>;
  delete out.command;
  delete out.args;
  return out;
}

/** pino-pretty in this thread (no transport worker), loaded only when used. */
function prettyStream(): DestinationStream {
  const pretty = createRequire(import.meta.url)('pino-pretty') as (o: object) => DestinationStream;
  return pretty({ sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' });
}

export function createLogger(level: string, format: LogFormat = 'json'): Logger {
  const options = { level, serializers: { err: serializeError } };
  const pretty = format === 'pretty' || (format === 'auto' && process.stdout.isTTY === true);
  return pretty ? pino(options, prettyStream()) : pino(options);
}
