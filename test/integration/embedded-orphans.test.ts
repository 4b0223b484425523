// A SIGTERM at any moment of a start with the embedded Redis stops the
// redis-server that start spawned: many starts, each stopped at a random
// moment (some before the port opens, some right after), then the
// redis-server processes still running in their data folders are counted.
// REDSTALK_ORPHAN_STARTS sets how many: 100 by default (CI), 200 for the full
// run (about three minutes on this 2-core machine under a load average of 10).
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/redstalk.js';

const STARTS = Number(process.env.REDSTALK_ORPHAN_STARTS || 100);
/** Two starts at a time: the machine has two cores. */
const PARALLEL = 2;
const root = mkdtempSync(path.join(tmpdir(), 'redstalk-orphans-'));

/** The command line as the other process tests run it: the fresh bundle, else the sources under tsx. */
function command(): [string, string[]] {
  const cmd = process.env.REDSTALK_CMD?.split(' ');
  return cmd ? [cmd[0]!, cmd.slice(1)] : [process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/cli.ts')]];
}

/** redis-server processes whose working folder (its --dir) is under `under`. */
function redisServersIn(under: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/comm`, 'utf8').startsWith('redis-server')) continue;
      if (readlinkSync(`/proc/${entry}/cwd`).startsWith(under)) found.push(Number(entry));
    } catch { /* gone meanwhile, or not ours to read */ }
  }
  return found;
}

type When = 'after spawn' | 'after listening';

/** One start, stopped by SIGTERM `delayMs` after it was spawned, or after it logged that it listens. */
interface Outcome { when: When; delayMs: number; code: number | null; signal: string | null; err: string }

function startAndStop(n: number, when: When, delayMs: number): Promise<Outcome> {
  const dir = path.join(root, String(n));
  mkdirSync(dir);
  const [bin, args] = command();
  const child = spawn(bin, [...args, '-l', '127.0.0.1', '-p', '0', '--data-dir', dir, '--log-level', 'info'], {
    cwd: dir, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => { err += d; });
  const stop = () => setTimeout(() => child.kill('SIGTERM'), delayMs);
  if (when === 'after spawn') stop();
  child.stdout!.on('data', (d: Buffer) => {
    if (when === 'after listening' && !out.includes('redstalk listening') && (out + d).includes('redstalk listening')) stop();
    out += d;
  });
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ when, delayMs, code, signal, err: err.slice(-300) })));
}

describe('the embedded redis-server, owned', () => {
  afterAll(() => {
    // Whatever a failed run left: stopped, by pid.
    for (const pid of redisServersIn(root)) process.kill(pid, 'SIGKILL');
    rmSync(root, { recursive: true, force: true });
  });

  it(`leaves no redis-server behind when SIGTERM comes at any moment of ${STARTS} starts`, async () => {
    const outcomes: Outcome[] = [];
    let next = 0;
    const worker = async () => {
      while (next < STARTS) {
        const n = next++;
        // Half at any moment of the first 800 ms after spawn (before and after the port
        // opens, during the redis-server's start, once serving); half within 30 ms after
        // the port opened (while the embedded Redis starts: where it used to be left running).
        const when: When = n % 2 ? 'after listening' : 'after spawn';
        outcomes.push(await startAndStop(n, when, Math.random() * (when === 'after spawn' ? 800 : 30)));
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, worker));
    expect(outcomes).toHaveLength(STARTS);
    // Each exited: 0 once its handlers were set, or killed by the signal before that.
    expect(outcomes.filter((o) => !(o.code === 0 || o.signal === 'SIGTERM'))).toEqual([]);
    expect(redisServersIn(root)).toEqual([]);
  }, 600_000);
});
