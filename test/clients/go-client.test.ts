/**
 * The Go client (clients/go): runs `go test -count=1 ./...` there, whose tests start
 * their own redis-server and redstalk sidecars (every command and error word, the
 * Worker helper, the example worker command, and the replay of every
 * protocol/transcripts/*.txt scenario on a fresh sidecar).
 *
 * `go test` runs in a process group of its own, so a timeout stops it and everything
 * it started (the sidecars and redis-server also die with the test binary: they are
 * tied to it with PR_SET_PDEATHSIG). On failure its whole output is shown.
 * Skipped when `go` is not installed (`.ci/run` installs Debian's golang-go).
 */
import { spawn, spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const CLIENT_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../clients/go');
/** About 1-2 minutes on 2 cores (a first run also compiles). */
const SUITE_TIMEOUT_MS = 420_000;
const TEST_TIMEOUT_MS = SUITE_TIMEOUT_MS + 15_000;

const hasGo = spawnSync('sh', ['-c', 'command -v go'], { stdio: 'ignore' }).status === 0;

interface SuiteResult { code: number | null; signal: NodeJS.Signals | null; output: string; }

/** Asynchronous, so that vitest's own timers keep running while the suite does. */
function runSuite(): Promise<SuiteResult> {
  return new Promise((resolve) => {
    const child = spawn('go', ['test', '-count=1', './...'], {
      cwd: CLIENT_DIR,
      detached: true, // its own process group: one kill reaches go, the test binaries and their children
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        GOFLAGS: '-mod=mod',
        GOPROXY: 'off', // no dependencies, and no network here
        GOCACHE: process.env.GOCACHE ?? path.join(os.tmpdir(), 'redstalk-go-cache'),
        GOPATH: process.env.GOPATH ?? path.join(os.tmpdir(), 'redstalk-gopath'),
      },
    });
    let output = '';
    child.stdout.on('data', (d) => { output += d; });
    child.stderr.on('data', (d) => { output += d; });
    const killGroup = (signal: NodeJS.Signals) => { try { process.kill(-child.pid!, signal); } catch { /* already gone */ } };
    const onExit = () => killGroup('SIGKILL');
    process.once('exit', onExit);
    const timer = setTimeout(() => {
      output += `\n[killed: no result within ${SUITE_TIMEOUT_MS} ms]\n`;
      killGroup('SIGTERM');
      setTimeout(() => killGroup('SIGKILL'), 10_000).unref();
    }, SUITE_TIMEOUT_MS);
    child.on('error', (err) => { output += `${err.message}\n`; });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      process.removeListener('exit', onExit);
      resolve({ code, signal, output });
    });
  });
}

it.skipIf(!hasGo)(
  hasGo ? 'passes its tests (go test ./... in clients/go)' : 'skipped: `go` is not installed (Debian: golang-go)',
  async () => {
    const res = await runSuite();
    const report = `go test ./...: exit ${res.code ?? `signal ${res.signal ?? '?'}`}\n${res.output}`;
    expect(res.code, report).toBe(0);
    expect(res.output, report).toMatch(/^ok\s+github\.com\/redstalk\/redstalk\/clients\/go\s/m);
  },
  TEST_TIMEOUT_MS,
);
