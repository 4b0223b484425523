// Replays every conformance transcript (protocol/transcripts/*.txt) through the
// client's reply reader, each scenario on a fresh server over one new connection
// (an in-process sidecar, or REDSTALK_CMD's server when it is set).
import { readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ReplyReader, type Reply } from '../src/reader.js';
import { ROOT, Servers } from './harness.js';

const DIR = path.join(ROOT, 'protocol/transcripts');
const REPLY_TIMEOUT_MS = 3000;
/** Scenarios replayed at once (each on its own sidecar). */
const PARALLEL = 4;

interface Step { send: string; replies: string[] }
interface Scenario { file: string; name: string; steps: Step[] }

/** `\r \n \t \0 \\ \xNN` → the bytes, as a latin1 string (one char per byte). */
function unescape(s: string): string {
  return s.replace(/\\(x[0-9a-fA-F]{2}|.)/g, (_m, e: string) => {
    const simple: Record<string, string> = { r: '\r', n: '\n', t: '\t', '0': '\0', '\\': '\\' };
    if (e[0] === 'x') return String.fromCharCode(parseInt(e.slice(1), 16));
    if (simple[e] === undefined) throw new Error(`unknown escape \\${e}`);
    return simple[e];
  });
}

function escape(s: string): string {
  return s.replace(/[^\x20-\x7e]|\\/g, (c) => ({ '\r': '\\r', '\n': '\\n', '\t': '\\t', '\0': '\\0', '\\': '\\\\' })[c]
    ?? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

function parse(file: string): Scenario[] {
  const scenarios: Scenario[] = [];
  for (const [i, line] of readFileSync(path.join(DIR, file), 'latin1').split('\n').entries()) {
    if (line === '' || line.startsWith('#')) continue;
    const current = scenarios.at(-1);
    if (line.startsWith('=== ')) scenarios.push({ file, name: line.slice(4), steps: [] });
    else if (line.startsWith('C: ') && current) current.steps.push({ send: unescape(line.slice(3)), replies: [] });
    else if (line.startsWith('S: ') && current?.steps.length) current.steps.at(-1)!.replies.push(line.slice(3));
    else throw new Error(`${file}:${i + 1}: cannot parse ${JSON.stringify(line.slice(0, 80))}`);
  }
  return scenarios;
}

/** A reply as the bytes it came in (the reader checked the framing, so this is exact). */
function wire(r: Reply): string {
  let s = `${r.line}\r\n`;
  if (r.body) s += `${r.body.toString('latin1')}\r\n`;
  for (const j of r.jobs ?? []) s += wire(j);
  return s;
}

/** Whether `actual` is `expected` (escaped) where each {*} stands for a run of bytes other than CR and LF. */
export function matches(expected: string, actual: string): boolean {
  const parts = expected.split('{*}').map(unescape);
  const from = (k: number, at: number): boolean => {
    if (k === parts.length) return at === actual.length;
    const part = parts[k]!;
    if (k === 0) return actual.startsWith(part) && from(1, part.length);
    // The wildcard before `part` ends at or before the next CR/LF; try each place `part` can start.
    let limit = actual.slice(at).search(/[\r\n]/);
    limit = limit < 0 ? actual.length : at + limit;
    for (let p = actual.indexOf(part, at); p >= 0 && p <= limit; p = actual.indexOf(part, p + 1)) {
      if (from(k + 1, p + part.length)) return true;
    }
    return false;
  };
  return from(0, 0);
}

/** Replays one scenario on a server; returns what went wrong, or nothing. */
async function replay(s: Scenario, port: number): Promise<string | undefined> {
  const socket = net.connect(port, '127.0.0.1');
  const replies: Reply[] = [];
  let failure: string | undefined;
  let wake = () => {};
  const reader = new ReplyReader((r) => { replies.push(r); wake(); });
  socket.on('data', (d: Buffer) => {
    try { reader.push(d); } catch (err) { failure = (err as Error).message; wake(); }
  });
  socket.on('close', () => wake());
  socket.on('error', () => {});
  await new Promise<void>((resolve, reject) => { socket.once('connect', resolve); socket.once('error', reject); });
  const next = async (): Promise<Reply | undefined> => {
    const deadline = Date.now() + REPLY_TIMEOUT_MS;
    while (replies.length === 0 && !failure && !socket.destroyed && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, deadline - Date.now());
        wake = () => { clearTimeout(timer); resolve(); };
      });
    }
    return replies.shift();
  };
  try {
    for (const step of s.steps) {
      socket.write(Buffer.from(step.send, 'latin1'));
      for (const expected of step.replies) {
        const reply = await next();
        const actual = reply ? escape(wire(reply)) : `(none: ${failure ?? (socket.destroyed ? 'connection closed' : 'timed out')})`;
        if (!reply || !matches(expected, wire(reply))) {
          return `${s.file} / ${s.name}\n  sent:     ${escape(step.send).slice(0, 300)}\n  expected: ${expected.slice(0, 600)}\n  actual:   ${actual.slice(0, 600)}`;
        }
      }
    }
    // Nothing more may come: a reply the transcript does not list is a difference too.
    await new Promise((r) => setTimeout(r, 20));
    if (replies.length) return `${s.file} / ${s.name}: an extra reply ${escape(wire(replies[0]!))}`;
    return undefined;
  } finally {
    socket.destroy();
  }
}

const scenarios = readdirSync(DIR).filter((f) => f.endsWith('.txt')).sort().flatMap(parse);
const servers = new Servers();
afterAll(() => servers.stopAll());

describe('protocol/transcripts', () => {
  it('the matcher: {*} is one line\'s worth of bytes and no more', () => {
    expect(matches('OK {*}\\r\\n---\\nage: {*}\\n\\r\\n', 'OK 12\r\n---\nage: 3\n\r\n')).toBe(true);
    expect(matches('WAITING 1 {*}\\r\\n', 'WAITING 1 3\r\nX\r\n')).toBe(false);
    expect(matches('WAITING 1 {*}\\r\\n', 'WAITING 1 \r\n')).toBe(true);
    expect(matches('a{*}b\\r\\n', 'axbyb\r\n')).toBe(true);
    expect(matches('INSERTED 1\\r\\n', 'INSERTED 2\r\n')).toBe(false);
  });

  it('covers the beanstalkd scenarios and the extensions', () => {
    expect(scenarios.length).toBeGreaterThan(100);
    expect(scenarios.some((s) => s.file === 'extensions.txt')).toBe(true);
  });

  it('every scenario replays on a fresh redstalk through the client\'s reply reader', async () => {
    const failures: string[] = [];
    const queue = [...scenarios];
    await Promise.all(Array.from({ length: PARALLEL }, async () => {
      for (let s = queue.shift(); s; s = queue.shift()) {
        let server;
        try {
          server = await servers.freshCheap();
        } catch (err) {
          failures.push(`${s.file} / ${s.name}: ${(err as Error).message}`);
          queue.length = 0; // a server that does not start fails them all: stop here
          return;
        }
        try {
          const why = await replay(s, server.port);
          if (why) failures.push(why);
        } finally {
          await server.stop();
        }
      }
    }));
    expect(failures.join('\n\n')).toBe('');
  }, 600_000);
});
