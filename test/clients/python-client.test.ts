/**
 * The Python client (clients/python): runs its unittest suite, which starts its own
 * redis-server and redstalk sidecars (every command and error word, the Worker helper,
 * and the replay of every protocol/transcripts/*.txt scenario on a fresh sidecar).
 *
 * The suite is a child process; on failure its whole output is shown. It stops every
 * process it started, also when killed (they are tied to it with PR_SET_PDEATHSIG).
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const CLIENT_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../clients/python');
/** About 1-2 minutes on 2 cores; SIGTERM first so that the suite's cleanups run. */
const SUITE_TIMEOUT_MS = 420_000;
const TEST_TIMEOUT_MS = SUITE_TIMEOUT_MS + 15_000;

interface SuiteResult { code: number | null; signal: NodeJS.Signals | null; output: string; }

/** Asynchronous, so that vitest's own timers keep running while the suite does. */
function runSuite(): Promise<SuiteResult> {
  return new Promise((resolve) => {
    execFile(
      'python3',
      ['-m', 'unittest', '-v'],
      { cwd: CLIENT_DIR, timeout: SUITE_TIMEOUT_MS, killSignal: 'SIGTERM', maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : null;
        resolve({ code, signal: err?.signal ?? null, output: `${stdout}${stderr}${err && code === null && !err.signal ? err.message : ''}` });
      },
    );
  });
}

it('passes its unittest suite (python3 -m unittest in clients/python)', async () => {
  const res = await runSuite();
  const report = `python3 -m unittest: exit ${res.code ?? `signal ${res.signal ?? '?'}`}\n${res.output}`;
  expect(res.code, report).toBe(0);
  expect(res.output, report).toMatch(/^Ran [1-9]\d* tests? in /m);
  expect(res.output, report).toMatch(/^OK\b/m);
}, TEST_TIMEOUT_MS);
