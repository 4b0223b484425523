import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { hasBeanstalkd, startBeanstalkd } from '../helpers/beanstalkd.js';
import { waitForPort } from '../helpers/ports.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import type { Target, TargetInstance } from './engine.js';
import type { Dialect, RawReply } from './normalise.js';

/** "1.12" for Debian's package; anything >= 1.13 speaks the 1.13 dialect. */
export function beanstalkdVersion(): string | undefined {
  if (!hasBeanstalkd) return undefined;
  const r = spawnSync('beanstalkd', ['-v'], { encoding: 'utf8' });
  return /(\d+\.\d+)/.exec(`${r.stdout}${r.stderr}`)?.[1];
}

export function dialectOf(version: string | undefined): Dialect {
  if (!version) return '1.12';
  const [maj, min] = version.split('.').map(Number);
  return (maj ?? 0) > 1 || (min ?? 0) >= 13 ? '1.13' : '1.12';
}

/** The real beanstalkd, a fresh in-memory process per scenario. */
export function beanstalkdTarget(name = 'beanstalkd'): Target {
  return { name, dialect: dialectOf(beanstalkdVersion()), start: () => startBeanstalkd() };
}

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** True once the lead's server exists (src/index.ts). */
export const hasRedstalkServer = existsSync(path.join(ROOT, 'src/index.ts'));

/**
 * redstalk in-process on a shared redis-server; each start() gets a new key
 * prefix, so ids and counters start from zero.
 *
 * startBeanstalkd() probes the port once with a throw-away TCP connection
 * (waitForPort), which beanstalkd counts in `total-connections`. We make the
 * same single probe here so that both targets start from the same count.
 */
export function redstalkTarget(redisUrl: string, name = 'redstalk'): Target {
  return {
    name,
    dialect: '1.13',
    async start(): Promise<TargetInstance> {
      const helper = await import('../helpers/redstalk.js');
      const s = await helper.startRedstalk({ redisUrl });
      await waitForPort(s.port);
      return { port: s.port, stop: () => s.stop() };
    },
  };
}

/**
 * A TCP proxy in front of another target that may rewrite replies. Used by the
 * engine self-test to prove that differences are detected (and that the
 * normaliser tolerates only what it should). `rewrite` gets every complete
 * reply (line + data chunk) of the server-to-client stream and returns the
 * bytes to forward.
 */
export function proxyTarget(inner: Target, name: string, rewrite: (r: RawReply, index: number) => Buffer | string, dialect: Dialect = inner.dialect): Target {
  return {
    name,
    dialect,
    async start(): Promise<TargetInstance> {
      const up = await inner.start();
      const sockets = new Set<net.Socket>();
      let index = 0;
      const server = net.createServer((client) => {
        const upstream = net.connect(up.port, '127.0.0.1');
        sockets.add(client); sockets.add(upstream);
        let buf = Buffer.alloc(0);
        client.on('data', (d) => upstream.write(d));
        client.on('end', () => upstream.end());
        upstream.on('end', () => client.end());
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
        client.on('error', () => undefined);
        upstream.on('error', () => undefined);
        upstream.on('data', (d) => {
          buf = Buffer.concat([buf, d]);
          for (;;) {
            const eol = buf.indexOf('\r\n');
            if (eol < 0) return;
            const line = buf.subarray(0, eol).toString('latin1');
            const m = /^(?:RESERVED \d+|FOUND \d+|OK) (\d+)$/.exec(line);
            const need = m ? eol + 2 + Number(m[1]) + 2 : eol + 2;
            if (buf.length < need) return;
            const r: RawReply = m ? { line, chunk: Buffer.from(buf.subarray(eol + 2, need)) } : { line };
            buf = buf.subarray(need);
            const outb = rewrite(r, index++);
            client.write(outb);
          }
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      // no waitForPort probe here: it would open an upstream connection and skew total-connections
      const port = (server.address() as net.AddressInfo).port;
      return {
        port,
        async stop() {
          for (const s of sockets) s.destroy();
          await new Promise<void>((resolve) => server.close(() => resolve()));
          await up.stop();
        },
      };
    },
  };
}

/** Serialises a reply back to wire bytes (for proxy rewrites). */
export function replyBytes(r: RawReply): Buffer {
  return Buffer.concat([Buffer.from(`${r.line}\r\n`, 'latin1'), r.chunk ?? Buffer.alloc(0)]);
}

/**
 * The reference (beanstalkd) and the subject of a comparison run: redstalk on a
 * private redis-server, or a second beanstalkd when checking scenarios
 * themselves (DIFF_SUBJECT=beanstalkd).
 */
export async function comparisonTargets(selfMode: boolean): Promise<{ ref: Target; sub: Target; stop(): Promise<void> }> {
  const ref = beanstalkdTarget('beanstalkd');
  if (selfMode) return { ref, sub: beanstalkdTarget('beanstalkd#2'), stop: async () => {} };
  const redis: TestRedis = await startRedis();
  return { ref, sub: redstalkTarget(redis.url), stop: () => redis.stop() };
}
