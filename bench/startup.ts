// Time from spawn to serving: redstalk (`node dist/cli.js`, with a Redis of its
// own or an embedded one) beside beanstalkd, interleaved, median of N starts.
//   npm run build && npm run bench:startup [-- --starts 20] [--also OTHER/dist/cli.js]
// --also adds another build's command line (say, main's), interleaved with the rest.
// "accepting": a TCP connect succeeds (what harnesses that wait for the port
// see); "answering": `list-tube-used` on that connection got its reply (the
// store is connected and the scripts are loaded). "node floor" is a Node
// process that does nothing but listen and answer: what Node itself costs.
// beanstalkd is $BEANSTALKD, else the one on PATH (its version is printed).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../src/cli/ports.js';
import { median } from './stats.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CLI = path.join(ROOT, 'dist/cli.js');
const arg = (name: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined);
const starts = Number(arg('--starts') || 20);
const also = arg('--also');

interface Timing { accepting: number; answering: number }

/** Connects as soon as the port accepts, then asks once; both times from t0. */
function probe(port: number, t0: number, child: ChildProcess): Promise<Timing> {
  return new Promise((resolve, reject) => {
    const attempt = () => {
      if (child.exitCode !== null) return reject(new Error(`exited with code ${child.exitCode}`));
      if (performance.now() - t0 > 20_000) return reject(new Error('did not start within 20 s'));
      const s = net.connect(port, '127.0.0.1');
      s.once('error', () => { s.destroy(); setTimeout(attempt, 1); });
      s.once('connect', () => {
        const accepting = performance.now() - t0;
        s.write('list-tube-used\r\n');
        s.once('data', () => { s.destroy(); resolve({ accepting, answering: performance.now() - t0 }); });
      });
    };
    attempt();
  });
}

async function timeStart(binary: string, args: (port: number) => string[]): Promise<Timing> {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(binary, args(port), { cwd: ROOT, stdio: 'ignore' });
  try {
    return await probe(port, t0, child);
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
  }
}

/** Listens on argv[1] and answers any input with one line. */
const NODE_FLOOR = "require('net').createServer((s) => s.on('data', () => s.write('USING default\\r\\n'))).listen(+process.argv[1], '127.0.0.1')";


async function main(): Promise<void> {
  if (!existsSync(CLI)) throw new Error('dist/cli.js is missing: npm run build first');
  const redisPort = await freePort();
  const redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const dataDirs: string[] = [];
  const targets: Record<string, (port: number) => Promise<Timing>> = {};
  for (const [label, cli] of [['redstalk', CLI], ...(also ? [['--also', path.resolve(also)]] : [])] as const) {
    targets[`${label} --redis`] = (n) => timeStart(process.execPath, (p) => [cli, '-l', '127.0.0.1', '-p', String(p), '--redis', `redis://127.0.0.1:${redisPort}`, '--prefix', `start${n}`, '--log-level', 'warn']);
    targets[`${label} embedded`] = () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'redstalk-startup-'));
      dataDirs.push(dir);
      return timeStart(process.execPath, (p) => [cli, '-l', '127.0.0.1', '-p', String(p), '--data-dir', dir, '--log-level', 'warn']);
    };
  }
  if (also) process.stdout.write(`--also: ${path.resolve(also)}\n`);
  targets['node floor'] = () => timeStart(process.execPath, (p) => ['-e', NODE_FLOOR, String(p)]);
  const beanstalkd = process.env.BEANSTALKD || 'beanstalkd';
  const version = spawnSync(beanstalkd, ['-v'], { encoding: 'utf8' });
  if (version.status === 0) {
    process.stdout.write(`beanstalkd: ${beanstalkd} (${version.stdout.trim()})\n`);
    targets.beanstalkd = () => timeStart(beanstalkd, (p) => ['-l', '127.0.0.1', '-p', String(p)]);
  }
  // Node reads this file of certificates at every start (about 40 ms here, on Node 20).
  if (process.env.NODE_EXTRA_CA_CERTS) process.stdout.write(`NODE_EXTRA_CA_CERTS is set (${process.env.NODE_EXTRA_CA_CERTS})\n`);
  const results = new Map<string, Timing[]>(Object.keys(targets).map((k) => [k, []]));
  try {
    await new Promise((r) => setTimeout(r, 200));
    for (let i = 0; i < starts; i++) {
      const order = i % 2 ? Object.keys(targets).reverse() : Object.keys(targets);
      for (const name of order) results.get(name)!.push(await targets[name]!(i));
    }
  } finally {
    redis.kill('SIGTERM');
    for (const d of dataDirs) rmSync(d, { recursive: true, force: true });
  }
  const base = results.get('beanstalkd');
  process.stdout.write(`spawn -> serving, median of ${starts} interleaved starts (ms), load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}\n`);
  process.stdout.write(`${'target'.padEnd(20)}${'accepting'.padStart(11)}${'answering'.padStart(11)}${'x beanstalkd'.padStart(14)}\n`);
  for (const [name, ts] of results) {
    const acc = median(ts.map((t) => t.accepting));
    const ans = median(ts.map((t) => t.answering));
    const ratio = base ? (ans / median(base.map((t) => t.answering))).toFixed(1) : '';
    process.stdout.write(`${name.padEnd(20)}${acc.toFixed(1).padStart(11)}${ans.toFixed(1).padStart(11)}${ratio.padStart(14)}\n`);
  }
}

await main();
