#!/usr/bin/env node
// redstalk [serve] — beanstalkd's flags (-l -p -z -V) plus Redis options.
import { Command, InvalidArgumentError } from 'commander';
import { pino } from 'pino';
import { checkConfig, ConfigError, type Config } from './config.js';
import { createServer, DEFAULTS, type RedstalkServer } from './index.js';
import { startEmbeddedRedis, type EmbeddedRedis } from './cli/embedded-redis.js';
import pkg from '../package.json' with { type: 'json' };

function integer(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('not a whole number');
  return Number(value);
}

async function serve(flags: Record<string, unknown>): Promise<void> {
  const env = process.env;
  let config: Config;
  let warnings: string[];
  try {
    ({ config, warnings } = checkConfig({
      listen: (flags.listen as string | undefined) ?? DEFAULTS.host,
      port: (flags.port as number | undefined) ?? DEFAULTS.port,
      maxJobSize: (flags.maxJobSize as number | undefined) ?? DEFAULTS.maxJobSize,
      redisUrl: (flags.redis as string | undefined) ?? env.REDSTALK_REDIS_URL ?? '',
      prefix: (flags.prefix as string | undefined) ?? env.REDSTALK_PREFIX ?? DEFAULTS.prefix,
      dataDir: (flags.dataDir as string | undefined) ?? env.REDSTALK_DATA_DIR ?? './redstalk-data',
      logLevel: ((flags.logLevel as string | undefined) ?? env.REDSTALK_LOG_LEVEL ?? DEFAULTS.logLevel) as Config['logLevel'],
    }));
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`redstalk: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = pino({ level: config.logLevel });
  for (const w of warnings) log.warn(w);
  if (config.listen.startsWith('unix:')) {
    process.stderr.write('redstalk: unix sockets (-l unix:PATH) are not supported yet\n');
    process.exit(2);
  }

  let embedded: EmbeddedRedis | null = null;
  let server: RedstalkServer | null = null;
  const stop = async (code: number) => {
    try {
      await server?.close();
    } finally {
      await embedded?.stop();
      process.exit(code);
    }
  };
  try {
    let redisUrl = config.redisUrl;
    if (!redisUrl) {
      embedded = await startEmbeddedRedis(config.dataDir, (line) => log.info({ redis: line }, 'embedded redis'));
      redisUrl = embedded.url;
      log.info({ dataDir: config.dataDir, port: embedded.port }, 'started embedded redis-server');
    }
    server = await createServer({
      host: config.listen, port: config.port, redisUrl, prefix: config.prefix,
      maxJobSize: config.maxJobSize, logLevel: config.logLevel,
    });
  } catch (err) {
    log.fatal({ err }, 'redstalk could not start');
    process.stderr.write(`redstalk: ${err instanceof Error ? err.message : String(err)}\n`);
    await embedded?.stop();
    process.exit(1);
  }
  let stopping = false;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      log.info({ signal }, 'shutting down');
      void stop(0);
    });
  }
  process.on('SIGUSR1', () => server?.drain());
}

const program = new Command('redstalk')
  .description('beanstalkd-compatible work queue that keeps every job in Redis')
  .version(pkg.version, '-V, --version', 'print the version and exit')
  .helpOption('-h, --help', 'show this help');

function addServeOptions(cmd: Command): Command {
  return cmd
    .option('-l, --listen <addr>', `listen on address (default ${DEFAULTS.host})`)
    .option('-p, --port <port>', `listen on port (default ${DEFAULTS.port})`, integer)
    .option('-z, --max-job-size <bytes>', `maximum job size in bytes (default ${DEFAULTS.maxJobSize})`, integer)
    .option('--redis <url>', 'Redis URL (env REDSTALK_REDIS_URL); none: run an embedded redis-server')
    .option('--prefix <prefix>', `key prefix in Redis (env REDSTALK_PREFIX, default ${DEFAULTS.prefix})`)
    .option('--data-dir <dir>', 'data folder of the embedded redis-server (env REDSTALK_DATA_DIR, default ./redstalk-data)')
    .option('--log-level <level>', 'fatal|error|warn|info|debug|trace|silent (env REDSTALK_LOG_LEVEL, default info)');
}

addServeOptions(program).action((flags: Record<string, unknown>) => serve(flags));
addServeOptions(program.command('serve').description('run the sidecar (the default command)'))
  .action((flags: Record<string, unknown>) => serve(flags));

await program.parseAsync(process.argv);
