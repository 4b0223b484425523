/**
 * Non-Node beanstalkd clients against redstalk, unchanged: Debian's PHP client
 * (php-pda-pheanstalk, Pheanstalk 4) and Ruby client (ruby-beaneater, beaneater 1.1).
 *
 * Each language has a standalone scenario script (test/clients/<lang>/scenario.*, run as
 * `<interpreter> <script> HOST PORT`) that uses the library as its README shows it and
 * checks every result itself; it prints `OK <n> checks` and exits 0, or prints `FAIL: ...`
 * and exits non-zero. Here each script is run against the real beanstalkd (the reference:
 * a failure there means the script is wrong) and against redstalk.
 *
 * A language is skipped when its interpreter or its Debian library is not installed
 * (`.ci/run` installs them: php-cli php-pda-pheanstalk ruby ruby-beaneater).
 */
import { execFile, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { hasBeanstalkd, startBeanstalkd } from '../helpers/beanstalkd.js';
import { startStack } from '../helpers/redstalk.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const HOST = '127.0.0.1';
/** A script that hangs (e.g. on a reserve that never returns) is killed before the test's own timeout. */
const SCRIPT_TIMEOUT_MS = 27_000;
const TEST_TIMEOUT_MS = 30_000;

interface Language {
  name: string;
  /** Interpreter command. */
  interpreter: string;
  /** A file of the Debian package, as `dpkg -L <package>` lists it. */
  libraryFile: string;
  libraryPackage: string;
  script: string;
}

const LANGUAGES: Language[] = [
  {
    name: 'PHP (pheanstalk)',
    interpreter: 'php',
    libraryFile: '/usr/share/php/Pheanstalk/Pheanstalk.php',
    libraryPackage: 'php-pda-pheanstalk',
    script: path.join(HERE, 'php', 'scenario.php'),
  },
  {
    name: 'Ruby (beaneater)',
    interpreter: 'ruby',
    libraryFile: '/usr/lib/ruby/vendor_ruby/beaneater.rb',
    libraryPackage: 'ruby-beaneater',
    script: path.join(HERE, 'ruby', 'scenario.rb'),
  },
];

const hasCommand = (cmd: string): boolean =>
  spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;

/** Why the language cannot run here, or undefined when it can. */
function missing(lang: Language): string | undefined {
  if (!hasCommand(lang.interpreter)) return `\`${lang.interpreter}\` is not installed`;
  if (!existsSync(lang.libraryFile)) return `${lang.libraryPackage} is not installed (no ${lang.libraryFile})`;
  return undefined;
}

interface ScriptResult { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string; }

/** Runs the script asynchronously: redstalk runs in this process, so the event loop must stay free. */
function runScenario(lang: Language, port: number): Promise<ScriptResult> {
  return new Promise((resolve) => {
    execFile(
      lang.interpreter,
      [lang.script, HOST, String(port)],
      { timeout: SCRIPT_TIMEOUT_MS, killSignal: 'SIGKILL', maxBuffer: 4 * 1024 * 1024 },
      (err, stdout, stderr) => {
        // err.code is the exit code, or a string such as ENOENT when the interpreter could not start.
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : null;
        resolve({ code, signal: err?.signal ?? null, stdout, stderr: err && code === null && !err.signal ? `${stderr}${err.message}\n` : stderr });
      },
    );
  });
}

function expectPassed(res: ScriptResult, where: string): void {
  const report = `${where}: exit ${res.code ?? `signal ${res.signal ?? '?'}`}\n--- stdout\n${res.stdout}--- stderr\n${res.stderr}`;
  expect(res.code, report).toBe(0);
  expect(res.stdout.trim(), report).toMatch(/^OK \d+ checks$/);
}

interface Server { port: number; stop(): Promise<void>; }

async function withServer(start: () => Promise<Server>, fn: (port: number) => Promise<void>): Promise<void> {
  const server = await start();
  try {
    await fn(server.port);
  } finally {
    await server.stop();
  }
}

for (const lang of LANGUAGES) {
  describe(lang.name, () => {
    const why = missing(lang);
    describe.skipIf(why !== undefined)(why === undefined ? 'scenario script' : `skipped: ${why}`, () => {
      it.skipIf(!hasBeanstalkd)(
        hasBeanstalkd ? 'passes against the real beanstalkd (reference)' : 'skipped: beanstalkd is not installed',
        async () => {
          await withServer(() => startBeanstalkd(), async (port) => {
            expectPassed(await runScenario(lang, port), 'beanstalkd');
          });
        },
        TEST_TIMEOUT_MS,
      );

      it('passes against redstalk', async () => {
        await withServer(() => startStack(), async (port) => {
          expectPassed(await runScenario(lang, port), 'redstalk');
        });
      }, TEST_TIMEOUT_MS);
    });
  });
}
