/**
 * The shell helper (clients/sh/redstalk.sh, over netcat-openbsd's `nc`): runs
 * clients/sh/test.sh against a redstalk started here, under `sh` (dash on Debian) and
 * under bash. The script prints `OK <n> checks` and exits 0, or prints each `FAIL: ...`.
 *
 * Skipped when `nc` is not installed (`.ci/run` must install netcat-openbsd).
 */
import { execFile, spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { startStack } from '../helpers/redstalk.js';

const SCRIPT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../clients/sh/test.sh');
const SCRIPT_TIMEOUT_MS = 25_000;
const TEST_TIMEOUT_MS = 30_000;

const hasCommand = (cmd: string): boolean =>
  spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;

interface ScriptResult { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string; }

/** Asynchronous: redstalk runs in this process, so the event loop must stay free. */
function runScript(shell: string, port: number): Promise<ScriptResult> {
  return new Promise((resolve) => {
    execFile(shell, [SCRIPT, '127.0.0.1', String(port)], { timeout: SCRIPT_TIMEOUT_MS, killSignal: 'SIGKILL' }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : null;
      resolve({ code, signal: err?.signal ?? null, stdout, stderr });
    });
  });
}

const hasNc = hasCommand('nc');

describe.skipIf(!hasNc)(hasNc ? 'redstalk.sh (nc)' : 'redstalk.sh skipped: `nc` is not installed (apt-get install netcat-openbsd)', () => {
  for (const shell of ['sh', 'bash']) {
    it.skipIf(!hasCommand(shell))(`passes clients/sh/test.sh under ${shell}`, async () => {
      const stack = await startStack();
      try {
        const res = await runScript(shell, stack.port);
        const report = `${shell} test.sh: exit ${res.code ?? `signal ${res.signal ?? '?'}`}\n--- stdout\n${res.stdout}--- stderr\n${res.stderr}`;
        expect(res.code, report).toBe(0);
        expect(res.stdout.trim(), report).toMatch(/^OK \d+ checks$/);
      } finally {
        await stack.stop();
      }
    }, TEST_TIMEOUT_MS);
  }
});
