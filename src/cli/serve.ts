// `redstalk serve`: listen first, so that a start is quick (harnesses connect
// as soon as the port accepts); then load the rest, start an embedded
// redis-server when no Redis URL is given, and the sidecar, which takes the
// connections that arrived meanwhile. Privileges are dropped like beanstalkd -u.
// With --workers N > 1 this process is the primary of N workers, or one of
// them (src/cli/workers.ts).
import type { Logger } from 'pino';
import type { Config } from '../config/settings.js';
import { Listener, tlsFilesOf } from '../server/listener.js';
import type { Sidecar } from '../server/sidecar.js';
import { visibleConfig } from '../config/check.js';
import type { EmbeddedRedis } from './embedded-redis.js';
import type { WorkerRole } from './workers.js';
import { fail, lookupUser } from './process.js';


export async function serve(config: Config, warnings: readonly string[], embeddedOnly: readonly string[]): Promise<void> {
  let role: WorkerRole | null = null;
  if (config.workers > 1) {
    const workers = await import('./workers.js');
    role = workers.workerRole();
    if (!role) return workers.runPrimary(config, warnings, embeddedOnly);
  }
  let as: { uid: number; gid: number } | undefined;
  let log: Logger | undefined;
  let listener: Listener | null = null;
  /** The embedded redis-server, starting or started (null with --redis). */
  let embeddedStart: Promise<EmbeddedRedis | null> = Promise.resolve(null);
  let embedded: EmbeddedRedis | null = null;
  let server: Sidecar | null = null;
  let drainAsked = false;
  let stopping = false;
  // Before the port opens (a client may signal as soon as it can connect): a
  // stop closes whatever has started so far.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      log?.info({ signal }, 'shutting down');
      void (async () => {
        try {
          await (server ? server.close() : listener?.close());
        } finally {
          // A stop during the embedded redis-server's start waits for it, so as not to leave it running.
          await (await embeddedStart.catch(() => null))?.stop().catch(() => {});
          process.exit(0);
        }
      })();
    });
  }
  process.on('SIGUSR1', () => {
    drainAsked = true;
    server?.drain();
  });
  try {
    as = config.user ? lookupUser(config.user) : undefined;
    // A worker joins the shared socket only once its sidecar serves (the
    // sidecar opens the listener then): meanwhile the other workers take the
    // connections, and a worker that fails to start never holds any.
    if (!role) listener = await Listener.open(config.listen, config.port, tlsFilesOf(config));
  } catch (err) {
    fail(`cannot listen on ${config.listen}:${config.port}: ${(err as Error).message}`);
  }

  // A worker uses the primary's embedded redis-server. Without a Redis URL the
  // embedded one starts now, while the rest loads; its lines wait for the logger.
  let redisUrl = config.redisUrl || (role?.redisUrl ?? '');
  const redisLines: string[] = [];
  if (!redisUrl) {
    let spawned = () => {};
    const spawning = new Promise<void>((resolve) => { spawned = resolve; });
    embeddedStart = import('./embedded-redis.js').then(({ startEmbeddedRedis }) => (stopping ? null : startEmbeddedRedis({
      dataDir: config.dataDir, fsync: config.fsync, ...as,
      onLog: (line) => (log ? log.info({ redis: line }, 'embedded redis') : redisLines.push(line)),
      onSpawned: spawned,
    })));
    embeddedStart.catch(() => { /* reported below */ });
    // Spawned before the server's modules load (which would hold up the spawn until they
    // have: it waits for a free port first), so that redis-server starts meanwhile.
    await Promise.race([spawning, embeddedStart.catch(() => null)]);
  }
  const [{ createLogger }, { openSidecar }] = await Promise.all([import('../log.js'), import('../open.js')]);
  log = createLogger(config.logLevel, config.logFormat);
  for (const line of redisLines) log.info({ redis: line }, 'embedded redis');
  if (role) {
    // The primary has logged the warnings and the configuration.
    log = log.child({ worker: role.n });
  } else {
    log.info({ listen: listener!.address }, 'redstalk listening');
    for (const w of warnings) log.warn(w);
    log.debug({ config: visibleConfig(config) }, 'configuration');
  }

  try {
    if (!redisUrl) {
      embedded = await embeddedStart;
      if (!embedded) return; // stopped meanwhile (the signal handler exits)
      redisUrl = embedded.url;
      log.info({ dataDir: config.dataDir, port: embedded.port, fsync: config.fsync }, 'started embedded redis-server');
    } else if (embeddedOnly.length > 0 && !role) {
      log.warn(`${embeddedOnly.join(', ')} apply to the embedded redis-server only; the Redis at --redis keeps its own persistence settings`);
    }
    server = (await openSidecar({ ...config, redisUrl }, log, listener ?? undefined)).sidecar;
    if (drainAsked) server.drain();
    if (as) {
      // Like beanstalkd: bind first (maybe a privileged port), then drop privileges.
      if (!process.setgid || !process.setuid) throw new Error('-u is not supported on this platform');
      process.setgid(as.gid);
      process.setuid(as.uid);
    }
    role?.ready();
  } catch (err) {
    // A stop during the start closed what the start was using: the signal handler exits.
    if (stopping) return;
    log.fatal({ err }, 'redstalk could not start');
    await (server ? server.close() : listener?.close());
    await embedded?.stop();
    const message = err instanceof Error ? err.message : String(err);
    if (role) {
      // The primary says why and exits 1.
      await role.failed(message);
      process.exit(1);
    }
    fail(message);
  }
  // A bug must not take every client's connection down with it: log it loudly and keep serving.
  process.on('unhandledRejection', (err) => log.error({ err }, 'unhandled rejection (bug)'));
}
