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
  // A store error is an expected condition (Redis down, full, slow): its stack says nothing.
  if (out.type === 'StoreError') delete out.stack;
  return out;
}

/** Warnings and errors with the same message: at most one line per this window. */
const REPEAT_WINDOW_MS = 1000;

/**
 * pino's logMethod hook that lets a repeated warning or error through once a
 * second, with how many like it it stands for (`repeated`): a Redis outage
 * seen by every command would otherwise write a line per command.
 */
function repeatLimiter(): (this: Logger, args: Parameters<Logger['info']>, method: (...a: unknown[]) => void, level: number) => void {
  const seen = new Map<string, { until: number; suppressed: number }>();
  return function limit(this: Logger, args, method, level) {
    if (level < 40) return method.apply(this, args as unknown[]);
    const msg = String(typeof args[0] === 'string' ? args[0] : args[1] ?? '');
    const now = Date.now();
    const entry = seen.get(msg);
    if (entry && now < entry.until) {
      entry.suppressed++;
      return;
    }
    if (seen.size > 1000) seen.clear(); // messages are few and fixed; bound it all the same
    seen.set(msg, { until: now + REPEAT_WINDOW_MS, suppressed: 0 });
    if (entry && entry.suppressed > 0) {
      const [first, ...rest] = args as unknown[];
      const obj = typeof first === 'object' && first !== null ? { ...first, repeated: entry.suppressed } : { repeated: entry.suppressed };
      return method.apply(this, typeof first === 'object' && first !== null ? [obj, ...rest] : [obj, first, ...rest]);
    }
    return method.apply(this, args as unknown[]);
  };
}

/** pino-pretty in this thread (no transport worker), loaded only when used. */
function prettyStream(): DestinationStream {
  const pretty = createRequire(import.meta.url)('pino-pretty') as (o: object) => DestinationStream;
  return pretty({ sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' });
}

/** `destination`: where JSON lines go (stdout when absent). */
export function createLogger(level: string, format: LogFormat = 'json', destination?: DestinationStream): Logger {
  const options = { level, serializers: { err: serializeError }, hooks: { logMethod: repeatLimiter() } };
  const pretty = format === 'pretty' || (format === 'auto' && process.stdout.isTTY === true);
  if (pretty) return pino(options, prettyStream());
  return destination ? pino(options, destination) : pino(options);
}
