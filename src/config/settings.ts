// Every setting of redstalk, one row each: its command-line flag, default,
// JSON Schema and help. The environment variable (REDSTALK_<NAME>), the
// commander options, the ajv schema, the Config type, the README's flag table
// and `redstalk config check` are all derived from these rows.
import commands from '../../protocol/commands.json' with { type: 'json' };
import { LIMITS } from '../protocol/spec.js';

interface Row<T> {
  /** commander's flag syntax: short and long name, and the value placeholder. */
  readonly flag: string;
  readonly default: T;
  readonly schema: Record<string, unknown> & { type: 'integer' | 'string' | 'boolean' };
  readonly help: string;
}

const integer = (flag: string, def: number, minimum: number, maximum: number, help: string): Row<number> =>
  ({ flag, default: def, schema: { type: 'integer', minimum, maximum }, help });
const text = (flag: string, def: string, schema: Record<string, unknown>, help: string): Row<string> =>
  ({ flag, default: def, schema: { type: 'string', ...schema }, help });
/** A switch: on when its flag is given (in the environment or a file: true/false, 1/0, on/off). */
const toggle = (flag: string, help: string): Row<boolean> => ({ flag, default: false, schema: { type: 'boolean' }, help });
const choice = <T extends string>(flag: string, def: T, values: readonly T[], help: string): Row<T> =>
  ({ flag, default: def, schema: { type: 'string', enum: values }, help });

/** room-config's bounds for one of its arguments, so a default can never be what room-config refuses. */
function roomBound(arg: string): { min: number; max: number } {
  const spec = commands.commands.find((c) => c.name === 'room-config')!.args.find((a) => a.name === arg) as { min?: number; max?: number };
  return { min: spec.min ?? 0, max: spec.max ?? 4294967295 };
}
const room = (flag: string, arg: string, def: number, help: string): Row<number> => {
  const { min, max } = roomBound(arg);
  return integer(flag, def, min, max, `waiting rooms without room-config: ${help}`);
};

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export const FSYNC_MODES = ['always', 'everysec', 'no'] as const;
export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;

export const SETTINGS = {
  listen: text('-l, --listen <addr>', '127.0.0.1', { pattern: '.' },
    'listen address, or unix:PATH for a UNIX socket (beanstalkd: 0.0.0.0; a sidecar is local by default)'),
  port: integer('-p, --port <port>', 11300, 0, 65535, 'listen port (0: any free port)'),
  maxJobSize: integer('-z, --max-job-size <bytes>', LIMITS.defaultMaxJobSize, 0, Number.MAX_SAFE_INTEGER,
    `maximum job size in bytes (clamped to ${LIMITS.maxJobSizeCap}, as beanstalkd)`),
  redisUrl: text('--redis <url>', '', { pattern: '^((rediss?|redis-cluster|redis-sentinel)://.+|unix:///.+)?$' },
    'redis://[:password@]host:port[/db] (rediss:// for TLS), unix:///path/to/redis.sock[?db=N&password=P] for a Redis on this machine (cheaper per call than TCP), redis-sentinel://[:password@]h1:p1,h2:p2[/db][?master=NAME] to follow failovers, or redis-cluster://h1:p1,h2:p2; empty: start an embedded redis-server'),
  prefix: text('--prefix <prefix>', 'redstalk', { pattern: '^[A-Za-z0-9_.-]{1,64}$' },
    'key prefix in Redis: sidecars with the same Redis and prefix are one server'),
  shards: integer('--shards <n>', 1, 1, 256,
    'split the data set into this many shards (hash tags), tubes and rooms spread by name; fixed when the data set is created (redstalk reshard changes it)'),
  workers: integer('--workers <n>', 1, 1, 256, 'sidecar processes sharing the listening socket (one per core to use)'),
  dataDir: text('-b, --data-dir <dir>', './redstalk-data', { pattern: '.' },
    'data folder of the embedded redis-server (beanstalkd\'s binlog directory)'),
  fsync: choice('--fsync <mode>', 'everysec', FSYNC_MODES,
    'embedded redis-server appendfsync: always, everysec or no (beanstalkd: -f0 always, -f MS everysec, -F no)'),
  user: text('-u, --user <user>', '', {}, 'become this user and its group once listening'),
  logLevel: choice('--log-level <level>', 'info', LOG_LEVELS, 'log level (-V is debug, -VV trace)'),
  logFormat: choice('--log-format <format>', 'auto', LOG_FORMATS, 'json lines, or pretty for people; auto: pretty when stdout is a terminal'),
  batchOps: integer('--batch-ops <n>', 512, 1, 100_000, 'most job commands in one Redis call'),
  batchBytes: integer('--batch-bytes <bytes>', 1 << 20, 1, 1 << 30, 'most job body bytes in one Redis call (a bigger single job still goes, alone)'),
  batchInFlight: integer('--batch-inflight <n>', 1, 1, 64, 'Redis calls of job commands in flight at once'),
  redisTimeoutMs: integer('--redis-timeout-ms <ms>', 2000, 10, 3_600_000,
    'how long a Redis call may take (plus 1 ms per 10 KB of -z, to move the biggest job) before its outcome counts as unknown'),
  heartbeatMs: integer('--heartbeat-ms <ms>', 1000, 50, 60_000, 'how often a sidecar renews its lease; it counts as dead after 5 missed beats'),
  shutdownGraceMs: integer('--shutdown-grace-ms <ms>', 2000, 0, 600_000,
    'on SIGTERM, how long to wait at most for commands in flight and replies not yet written'),
  minReplicas: integer('--min-replicas <n>', 0, 0, 16,
    'acknowledge a write only once this many replicas have it (one WAIT per batch); fewer in time: the connection is closed, the outcome unknown'),
  minReplicasTimeoutMs: integer('--min-replicas-timeout-ms <ms>', 1000, 1, 600_000, 'how long to wait for --min-replicas replicas'),
  tlsCert: text('--tls-cert <file>', '', {}, 'serve TLS on the TCP listener with this certificate (PEM; with --tls-key)'),
  tlsKey: text('--tls-key <file>', '', {}, 'the private key of --tls-cert (PEM)'),
  tlsCa: text('--tls-ca <file>', '', {}, 'require client certificates signed by these CAs (mutual TLS; PEM)'),
  // `auth <token>\r\n` must fit a command line (224 bytes): 217 bytes at most.
  authToken: text('--auth-token <token>', '', { pattern: '^[\\x21-\\x7e]{0,217}$' },
    'clients must send `auth <token>` before any other command (prefer REDSTALK_AUTH_TOKEN or --auth-token-file: a flag shows in ps)'),
  authTokenFile: text('--auth-token-file <file>', '', {}, 'read the auth token from this file (its first line)'),
  maxConnections: integer('--max-connections <n>', 0, 0, 1_000_000, 'connections over this many are closed at once (0: no limit)'),
  http: text('--http <addr:port>', '', { pattern: '^(.+:[0-9]+)?$' },
    'serve /healthz, /readyz, /metrics and the admin API (/api/, protocol/admin-api.yaml) over HTTP on this address (off when empty)'),
  httpAdminToken: text('--http-admin-token <token>', '', { pattern: '^[\\x21-\\x7e]{0,217}$' },
    'allow changes through the --http admin API (kick, delete, pause, bulk actions) to requests with `Authorization: Bearer <token>`; without it (nor --auth-token) the API is read-only (prefer REDSTALK_HTTP_ADMIN_TOKEN: a flag shows in ps)'),
  httpHosts: text('--http-hosts <names>', '', { pattern: '^(\\*|[A-Za-z0-9.-]+(,[A-Za-z0-9.-]+)*)?$' },
    'host names, comma-separated, under which the admin API and dashboard also answer, besides IP addresses and localhost (a page of another name is refused: DNS rebinding); * for any'),
  dashboard: toggle('--dashboard', 'serve the dashboard at / of --http: overview, tubes, jobs, rooms, live by server-sent events (changes need --http-admin-token)'),
  metricsTubes: integer('--metrics-tubes <n>', 1000, 0, 1_000_000,
    'at most this many tubes and rooms, each, get series of their own in /metrics (the totals count all)'),
  roomCapacity: room('--room-capacity <n>', 'capacity', 100, 'people inside at once'),
  roomCheckinTimeout: room('--room-checkin-timeout <s>', 'checkin-timeout', 30, 'seconds someone waiting may go without checking in'),
  roomParticipantTimeout: room('--room-participant-timeout <s>', 'participant-timeout', 120, 'seconds a participant may go without checking in'),
  roomGrace: room('--room-grace <s>', 'grace', 30, 'seconds a participant who left keeps their place'),
};

export type SettingName = keyof typeof SETTINGS;
type ValueOf<R> = R extends Row<infer T> ? T : never;

/** The whole configuration: one value per setting. */
export type Config = { [K in SettingName]: ValueOf<(typeof SETTINGS)[K]> };

export const SETTING_NAMES = Object.keys(SETTINGS) as SettingName[];

/** REDSTALK_ and the setting's name in upper snake case: batchInFlight -> REDSTALK_BATCH_IN_FLIGHT. */
export function envName(name: SettingName): string {
  return `REDSTALK_${name.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`;
}

export const DEFAULTS = Object.freeze(Object.fromEntries(SETTING_NAMES.map((n) => [n, SETTINGS[n].default])) as Config);

/** The JSON Schema of a whole configuration (compiled ahead of time: scripts/gen-config-validator.ts). */
export const SETTINGS_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: SETTING_NAMES,
  properties: Object.fromEntries(SETTING_NAMES.map((n) => [n, SETTINGS[n].schema])),
};
