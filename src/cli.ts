#!/usr/bin/env node
// redstalk [serve] — beanstalkd's own flags (-b -f -F -l -p -u -z -s -v -V) plus Redis options.
import { execFileSync } from 'node:child_process';
import { Command, InvalidArgumentError } from 'commander';
import { checkConfig, ConfigError, type Config } from './config.js';
import { createLogger } from './log.js';
import { createServer, DEFAULTS, type RedstalkServer } from './index.js';
import { startEmbeddedRedis, type EmbeddedRedis } from './cli/embedded-redis.js';
import pkg from '../package.json' with { type: 'json' };

const LEVELS: Config['logLevel'][] = ['info', 'debug', 'trace'];

function integer(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('not a whole number');
  return Number(value);
}

interface Flags {
  listen?: string; port?: number; maxJobSize?: number; redis?: string; prefix?: string;
  dataDir?: string; binlogDir?: string; fsyncMs?: number; neverFsync?: boolean; logSize?: number;
  user?: string; verbose: number; logLevel?: string;
  batchOps?: number; batchBytes?: number; batchInflight?: number;
  roomCapacity?: number; roomCheckinTimeout?: number; roomParticipantTimeout?: number; roomGrace?: number;
}

/** uid and gid of a user, as beanstalkd -u USER ("become user and group"). */
function lookupUser(user: string): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync('id', [flag, user], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

function loadConfig(flags: Flags): { config: Config; warnings: string[] } {
  const env = process.env;
  const fsync: Config['fsync'] = flags.neverFsync ? 'no' : flags.fsyncMs === 0 ? 'always' : 'everysec';
  const level = flags.logLevel ?? env.REDSTALK_LOG_LEVEL ?? LEVELS[Math.min(flags.verbose, LEVELS.length - 1)]!;
  const result = checkConfig({
    listen: flags.listen ?? DEFAULTS.host,
    port: flags.port ?? DEFAULTS.port,
    maxJobSize: flags.maxJobSize ?? DEFAULTS.maxJobSize,
    redisUrl: flags.redis ?? env.REDSTALK_REDIS_URL ?? '',
    prefix: flags.prefix ?? env.REDSTALK_PREFIX ?? DEFAULTS.prefix,
    dataDir: flags.dataDir ?? flags.binlogDir ?? env.REDSTALK_DATA_DIR ?? './redstalk-data',
    fsync,
    user: flags.user ?? '',
    logLevel: level as Config['logLevel'],
    batchOps: flags.batchOps ?? DEFAULTS.batchOps,
    batchBytes: flags.batchBytes ?? DEFAULTS.batchBytes,
    batchInFlight: flags.batchInflight ?? DEFAULTS.batchInFlight,
    roomCapacity: flags.roomCapacity ?? DEFAULTS.roomDefaults.capacity,
    roomCheckinTimeout: flags.roomCheckinTimeout ?? DEFAULTS.roomDefaults.checkinTimeout,
    roomParticipantTimeout: flags.roomParticipantTimeout ?? DEFAULTS.roomDefaults.participantTimeout,
    roomGrace: flags.roomGrace ?? DEFAULTS.roomDefaults.grace,
  });
  if (flags.logSize !== undefined) result.warnings.push('-s has no effect: Redis persistence replaces the binlog');
  if (flags.fsyncMs !== undefined && flags.fsyncMs > 0) {
    result.warnings.push(`-f ${flags.fsyncMs}: the embedded redis-server fsyncs its append-only file every second`);
  }
  return result;
}

async function serve(flags: Flags): Promise<void> {
  let config: Config;
  let warnings: string[];
  try {
    ({ config, warnings } = loadConfig(flags));
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`redstalk: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger(config.logLevel);
  for (const w of warnings) log.warn(w);
  log.debug({ config: { ...config, redisUrl: config.redisUrl.replace(/\/\/[^@/]*@/, '//***@') } }, 'configuration');

  let embedded: EmbeddedRedis | null = null;
  let server: RedstalkServer | null = null;
  try {
    const as = config.user ? lookupUser(config.user) : undefined;
    let redisUrl = config.redisUrl;
    if (!redisUrl) {
      embedded = await startEmbeddedRedis({
        dataDir: config.dataDir, fsync: config.fsync, ...as,
        onLog: (line) => log.info({ redis: line }, 'embedded redis'),
      });
      redisUrl = embedded.url;
      log.info({ dataDir: config.dataDir, port: embedded.port, fsync: config.fsync }, 'started embedded redis-server');
    } else if (flags.binlogDir || flags.fsyncMs !== undefined || flags.neverFsync) {
      log.warn('-b, -f and -F apply to the embedded redis-server only; the Redis at --redis keeps its own persistence settings');
    }
    server = await createServer({
      host: config.listen, port: config.port, redisUrl, prefix: config.prefix,
      maxJobSize: config.maxJobSize, logLevel: config.logLevel,
      batchOps: config.batchOps, batchBytes: config.batchBytes, batchInFlight: config.batchInFlight,
      roomDefaults: {
        capacity: config.roomCapacity, checkinTimeout: config.roomCheckinTimeout,
        participantTimeout: config.roomParticipantTimeout, grace: config.roomGrace,
      },
    });
    if (as) {
      // Like beanstalkd: bind first (maybe a privileged port), then drop privileges.
      if (!process.setgid || !process.setuid) throw new Error('-u is not supported on this platform');
      process.setgid(as.gid);
      process.setuid(as.uid);
    }
  } catch (err) {
    log.fatal({ err }, 'redstalk could not start');
    process.stderr.write(`redstalk: ${err instanceof Error ? err.message : String(err)}\n`);
    await server?.close();
    await embedded?.stop();
    process.exit(1);
  }
  let stopping = false;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      log.info({ signal }, 'shutting down');
      void (async () => {
        try {
          await server?.close();
        } finally {
          await embedded?.stop();
          process.exit(0);
        }
      })();
    });
  }
  process.on('SIGUSR1', () => server?.drain());
  // A bug must not take every client's connection down with it: log it loudly and keep serving.
  process.on('unhandledRejection', (err) => log.error({ err }, 'unhandled rejection (bug)'));
}

function addServeOptions(cmd: Command): Command {
  return cmd
    .option('-b, --binlog-dir <dir>', 'beanstalkd\'s binlog directory: here, the data folder of the embedded redis-server')
    .option('-f, --fsync-ms <ms>', 'embedded redis-server: 0 fsyncs every write (appendfsync always), otherwise every second', integer)
    .option('-F, --never-fsync', 'embedded redis-server: never fsync (appendfsync no)')
    .option('-l, --listen <addr>', `listen on address, or unix:PATH (default ${DEFAULTS.host})`)
    .option('-p, --port <port>', `listen on port (default ${DEFAULTS.port})`, integer)
    .option('-u, --user <user>', 'become user and group once listening')
    .option('-z, --max-job-size <bytes>', `maximum job size in bytes (default ${DEFAULTS.maxJobSize}, at most 1073741824)`, integer)
    .option('-s, --log-size <bytes>', 'accepted for beanstalkd compatibility; no effect', integer)
    .option('-V, --verbose', 'increase verbosity (debug, then trace)', (_v: string, n: number) => n + 1, 0)
    .option('--redis <url>', 'redis://host:port or redis-cluster://host:port,... (env REDSTALK_REDIS_URL); none: run an embedded redis-server')
    .option('--prefix <prefix>', `key prefix in Redis (env REDSTALK_PREFIX, default ${DEFAULTS.prefix})`)
    .option('--data-dir <dir>', 'data folder of the embedded redis-server (env REDSTALK_DATA_DIR, default ./redstalk-data)')
    .option('--log-level <level>', 'fatal|error|warn|info|debug|trace|silent (env REDSTALK_LOG_LEVEL, default info)')
    .option('--batch-ops <n>', `most job commands per Redis call (default ${DEFAULTS.batchOps})`, integer)
    .option('--batch-bytes <bytes>', `most job body bytes per Redis call (default ${DEFAULTS.batchBytes})`, integer)
    .option('--batch-inflight <n>', `Redis calls of job commands in flight at once (default ${DEFAULTS.batchInFlight})`, integer)
    .option('--room-capacity <n>', `waiting rooms without room-config: how many may be inside at once (default ${DEFAULTS.roomDefaults.capacity})`, integer)
    .option('--room-checkin-timeout <s>', `waiting rooms without room-config: seconds someone waiting may go without checking in (default ${DEFAULTS.roomDefaults.checkinTimeout})`, integer)
    .option('--room-participant-timeout <s>', `waiting rooms without room-config: seconds a participant may go without checking in (default ${DEFAULTS.roomDefaults.participantTimeout})`, integer)
    .option('--room-grace <s>', `waiting rooms without room-config: seconds a participant who left keeps their place (default ${DEFAULTS.roomDefaults.grace})`, integer);
}

const program = new Command('redstalk')
  .description('beanstalkd-compatible work queue that keeps every job in Redis')
  .version(`redstalk ${pkg.version}`, '-v, --version', 'show version information')
  .helpOption('-h, --help', 'show this help');

addServeOptions(program).action((flags: Flags) => serve(flags));
addServeOptions(program.command('serve').description('run the sidecar (the default command)'))
  .action((flags: Flags) => serve(flags));

await program.parseAsync(process.argv);
