/**
 * Shared fixtures for the third-party client tests in test/clients/.
 *
 * Every client test file runs the same scenario twice, once per target: the real
 * beanstalkd (proves the scenario itself is right) and redstalk (proves that
 * redstalk behaves like it). Servers are only started through the test helpers.
 */
import { expect } from 'vitest';
import { hasBeanstalkd, startBeanstalkd } from '../helpers/beanstalkd.js';

export interface RunningServer { port: number; stop(): Promise<void>; }

export interface Target {
  name: 'beanstalkd' | 'redstalk';
  /** False when the target cannot run on this machine (the describe is skipped). */
  available: boolean;
  start(): Promise<RunningServer>;
}

export const TARGETS: Target[] = [
  // The reference first: if the scenario fails here, the scenario (not redstalk) is wrong.
  { name: 'beanstalkd', available: hasBeanstalkd, start: () => startBeanstalkd() },
  {
    name: 'redstalk',
    available: true,
    // Imported lazily so the beanstalkd half of a file still runs while src/ is incomplete.
    async start() {
      const { startStack } = await import('../helpers/redstalk.js');
      return startStack();
    },
  },
];

export const HOST = '127.0.0.1';

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` until it returns true (or throws after timeoutMs). */
export async function waitFor(what: string, probe: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await probe()) return;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** Rejects if `p` has not settled after ms (so a hung library call fails the test instead of the file). */
export function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => { t = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms); });
  return Promise.race([p, timeout]).finally(() => clearTimeout(t));
}

/** A body that breaks naive line-based parsers: NUL bytes, an inner CRLF, bytes that are not UTF-8, and a trailing CRLF. */
export const BINARY_BODY = Buffer.from([0x00, 0x62, 0x69, 0x6e, 0x0d, 0x0a, 0x00, 0xff, 0xfe, 0x80, 0x0d, 0x0a]);

/** The same traps (NULs, inner and trailing CRLF) using only 7-bit bytes, for clients that can only send strings. */
export const ASCII_BINARY_BODY = Buffer.from('\0bin\r\n\0\x01\x7f ctl\r\n', 'latin1');

export interface JobSpec { name: string; pri: number; delay: number; body: Buffer; }

export interface Scenario {
  /** Jobs the producer puts into the scenario tube, in put order. D is delayed. */
  jobs: JobSpec[];
  spec(name: string): JobSpec;
}

/** The scenario's jobs; `binary` is job B's body (BINARY_BODY unless the client cannot send raw bytes). */
export function scenario(binary: Buffer = BINARY_BODY): Scenario {
  const jobs: JobSpec[] = [
    { name: 'A', pri: 10, delay: 0, body: Buffer.from('alpha') },
    { name: 'B', pri: 5, delay: 0, body: binary },
    { name: 'C', pri: 20, delay: 0, body: Buffer.from('charlie: ünïcödé ✓ — "quoted" and: colon', 'utf8') },
    { name: 'D', pri: 1, delay: 1, body: Buffer.from('delta (put with delay 1)') },
    { name: 'E', pri: 15, delay: 0, body: Buffer.from('{"type":"echo","n":5}') },
    { name: 'F', pri: 100, delay: 0, body: Buffer.from('foxtrot '.repeat(7000)) }, // 56000 bytes: arrives in several reads
  ];
  return {
    jobs,
    spec(name) {
      const j = jobs.find((x) => x.name === name);
      if (!j) throw new Error(`no job ${name}`);
      return j;
    },
  };
}

/** Expected reserve order once D's delay has passed: lowest pri first. */
export const RESERVE_ORDER = ['D', 'B', 'A', 'E', 'C', 'F'];

/** A job the producer puts into `default`, more urgent than anything else; the worker ignores `default` and must never get it. */
export const DEFAULT_TUBE_JOB: JobSpec = { name: 'Z', pri: 0, delay: 0, body: Buffer.from('must stay in default') };

export const TTR = 60;

/** Number of jobs in the two-competing-workers test. */
export const COMPETE_JOBS = 40;

/** Job ids by scenario name and back (a library gives ids as strings or numbers). */
export class JobNames<Id> {
  readonly idOf = new Map<string, Id>();
  readonly nameOf = new Map<Id, string>();

  add(name: string, id: Id): void {
    this.idOf.set(name, id);
    this.nameOf.set(id, name);
  }

  id(name: string): Id {
    const v = this.idOf.get(name);
    if (v === undefined) throw new Error(`no id for ${name}`);
    return v;
  }
}

export interface Delivered { id: string; payload: unknown }

export interface CompetingWorker {
  /** The next job within 1 s, or null when the reserve timed out. */
  reserve(): Promise<Delivered | null>;
  delete(id: string): Promise<void>;
}

export interface Competition { putIds: string[]; got: string[][]; sent: Map<string, unknown>; received: Map<string, unknown> }

/**
 * Puts COMPETE_JOBS jobs one by one while the workers reserve and delete
 * concurrently (for at most 10 s); returns what was put and what each worker got.
 */
export async function compete(put: (i: number) => Promise<Delivered>, workers: CompetingWorker[]): Promise<Competition> {
  const putIds: string[] = [];
  const sent = new Map<string, unknown>();
  const received = new Map<string, unknown>();
  const got: string[][] = workers.map(() => []);
  let producing = true;
  const deadline = Date.now() + 10_000;
  const total = () => got.reduce((n, ids) => n + ids.length, 0);
  const loops = workers.map(async (w, i) => {
    while (Date.now() < deadline) {
      const job = await w.reserve();
      if (!job) {
        if (!producing && total() >= COMPETE_JOBS) return;
        continue;
      }
      got[i]!.push(job.id);
      received.set(job.id, job.payload);
      await sleep(2); // "work"
      await w.delete(job.id);
    }
  });
  for (let i = 0; i < COMPETE_JOBS; i++) {
    const job = await put(i);
    putIds.push(job.id);
    sent.set(job.id, job.payload);
  }
  producing = false;
  await Promise.all(loops);
  return { putIds, got, sent, received };
}

/** The end of the producer/worker scenario: the tube is empty again, and the server's totals add up. */
export function expectScenarioEnd(tubeStats: unknown, serverStats: object, tube: string): void {
  const stats = serverStats as Record<string, unknown>;
  expect(tubeStats).toMatchObject({
    name: tube, 'current-jobs-ready': 0, 'current-jobs-reserved': 0, 'current-jobs-delayed': 0,
    'current-jobs-buried': 0, 'total-jobs': 6, 'cmd-delete': 6, 'current-watching': 1, 'current-using': 1,
  });
  expect(stats['total-jobs']).toBeGreaterThanOrEqual(7);
  expect(stats['cmd-put']).toBeGreaterThanOrEqual(7);
  expect(stats['current-connections']).toBeGreaterThanOrEqual(2);
  expect(stats['current-producers']).toBeGreaterThanOrEqual(1);
  expect(stats['current-workers']).toBeGreaterThanOrEqual(1);
  expect(typeof stats.version).toBe('string');
}

/** Asserts every id was delivered exactly once across the workers; returns a description for failures. */
export function deliveryProblems(putIds: string[], perWorker: string[][]): string[] {
  const problems: string[] = [];
  const seen = new Map<string, number>();
  for (const ids of perWorker) for (const id of ids) seen.set(id, (seen.get(id) ?? 0) + 1);
  for (const id of putIds) {
    const n = seen.get(id) ?? 0;
    if (n !== 1) problems.push(`job ${id} delivered ${n} times`);
  }
  for (const id of seen.keys()) if (!putIds.includes(id)) problems.push(`unknown job ${id} delivered`);
  return problems;
}

/**
 * The minimal YAML reader jackd's README leaves to the caller ("Let callers decide how to
 * parse YAML"; the README pipes the text through the `yaml` package, which is not a
 * devDependency here). beanstalkd's YAML is printf-generated and flat: `---\n`, then either
 * `key: value` lines or `- item` lines. Quoted scalars ("...") are unquoted; bare numbers
 * become numbers.
 */
export function parseFlatYaml(text: string): Record<string, string | number> | string[] {
  if (!text.startsWith('---\n')) throw new Error(`YAML document must start with ---: ${JSON.stringify(text)}`);
  const lines = text.slice(4).split('\n');
  if (lines.pop() !== '') throw new Error(`YAML document must end with a newline: ${JSON.stringify(text)}`);
  const scalar = (v: string): string | number => {
    if (/^".*"$/.test(v)) return v.slice(1, -1);
    if (/^-?\d+(\.\d+)?$/.test(v)) return Number(v);
    return v;
  };
  if (lines.length > 0 && lines.every((l) => l.startsWith('- '))) return lines.map((l) => String(scalar(l.slice(2))));
  const out: Record<string, string | number> = {};
  for (const l of lines) {
    const m = /^([a-z-]+): (.*)$/.exec(l);
    if (!m) throw new Error(`bad YAML line ${JSON.stringify(l)}`);
    out[m[1]!] = scalar(m[2]!);
  }
  return out;
}

export function yamlMap(text: string): Record<string, string | number> {
  const v = parseFlatYaml(text);
  if (Array.isArray(v)) throw new Error(`expected a YAML mapping, got a list: ${JSON.stringify(text)}`);
  return v;
}

export function yamlList(text: string): string[] {
  const v = parseFlatYaml(text);
  if (!Array.isArray(v)) throw new Error(`expected a YAML list, got a mapping: ${JSON.stringify(text)}`);
  return v;
}

/** `body` as a JS string, for clients that only accept strings; throws unless the UTF-8 round trip is exact. */
export function asUtf8String(body: Buffer): string {
  const s = body.toString('utf8');
  if (!Buffer.from(s, 'utf8').equals(body)) throw new Error('body is not valid UTF-8; a string-only client cannot send it');
  return s;
}
