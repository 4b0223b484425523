/**
 * The scenario language (see README.md for the full description).
 *
 *   === name of the scenario
 *   a: put 0 0 1 5\r\nhello        send "put 0 0 1 5\r\nhello\r\n" on a, read 1 reply
 *   a:2 put 0 0 1 1\r\nxyz         same, read 2 replies
 *   a> reserve                     send "reserve\r\n", read nothing
 *   a>> put 0 0 1 1\r\nx           send raw bytes (no CRLF appended)
 *   a< 1 3000                      read 1 reply (optional count, optional timeout in ms)
 *   a silent 300                   nothing may arrive on a for 300 ms
 *   a close | a halfclose | a expect-closed
 *   sleep 1200
 *   ~ case-insensitive-commands: USING foo
 *                                  attaches to the previous reading step: what redstalk
 *                                  must answer instead of comparing (one line per reply)
 *
 * Escapes in text: \r \n \t \0 \s (space; trailing whitespace of a line is ignored,
 * so write trailing spaces as \s) \\ \{ \xNN.  Placeholders: {id:N} (the id of the
 * N-th job this target created), {rep:TEXT:N} (TEXT repeated N times).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { deliberateById } from './deliberate.js';

/** Bytes to send: latin1 strings (one char = one byte) and job-id placeholders. */
export type Template = Array<string | { id: number }>;

export interface Source { file: string; line: number; text: string; }

export interface Declared {
  /** id in DELIBERATE_DIVERGENCES */
  divergence: string;
  /** replies redstalk must give (normalised form, `{id:N}` placeholders, each ends in \r\n) */
  replies: string[];
}

export type Step =
  | { kind: 'send'; conn: string; data: Template; src: Source }
  | { kind: 'recv'; conn: string; count: number; timeoutMs: number; declared?: Declared; src: Source }
  | { kind: 'sleep'; ms: number; src: Source }
  | { kind: 'silent'; conn: string; ms: number; src: Source }
  | { kind: 'close'; conn: string; src: Source }
  | { kind: 'halfclose'; conn: string; src: Source }
  | { kind: 'expect-closed'; conn: string; timeoutMs: number; src: Source };

export interface Scenario { name: string; src: Source; steps: Step[]; }

export const DEFAULT_RECV_TIMEOUT_MS = 2000;

export class DslError extends Error {}

function fail(src: Source, msg: string): never {
  throw new DslError(`${src.file}:${src.line}: ${msg}\n    ${src.text}`);
}

/** Decodes escapes and placeholders. `keepIds` leaves `{id:N}` as literal text. */
export function parseTemplate(text: string, src: Source): Template {
  const out: Template = [];
  let cur = '';
  const push = (s: string) => { cur += s; };
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === '\\') {
      const n = text[i + 1];
      i++;
      switch (n) {
        case 'r': push('\r'); break;
        case 'n': push('\n'); break;
        case 't': push('\t'); break;
        case '0': push('\0'); break;
        case 's': push(' '); break;
        case '\\': push('\\'); break;
        case '{': push('{'); break;
        case 'x': {
          const hex = text.slice(i + 1, i + 3);
          if (!/^[0-9a-fA-F]{2}$/.test(hex)) fail(src, `bad \\x escape`);
          push(String.fromCharCode(parseInt(hex, 16)));
          i += 2;
          break;
        }
        default: fail(src, `unknown escape \\${n ?? ''}`);
      }
      continue;
    }
    if (ch === '{') {
      const close = text.indexOf('}', i);
      const inner = close < 0 ? '' : text.slice(i + 1, close);
      let m: RegExpExecArray | null;
      if ((m = /^id:(\d+)$/.exec(inner))) {
        if (cur) { out.push(cur); cur = ''; }
        const id = Number(m[1]);
        if (id < 1) fail(src, 'placeholder ids start at 1');
        out.push({ id });
        i = close;
        continue;
      }
      if ((m = /^rep:(.*):(\d+)$/.exec(inner))) {
        const unit = parseTemplate(m[1]!, src);
        if (unit.some((p) => typeof p !== 'string')) fail(src, '{rep:} cannot contain {id:}');
        push((unit as string[]).join('').repeat(Number(m[2])));
        i = close;
        continue;
      }
      fail(src, `unknown placeholder {${inner}} (write \\{ for a literal brace)`);
    }
    push(ch);
  }
  if (cur) out.push(cur);
  return out;
}

/** Expected-reply text of a `~` line: escapes decoded, `{id:N}` kept as text, CRLF appended. */
function parseExpected(text: string, src: Source): string {
  return parseTemplate(text, src).map((p) => (typeof p === 'string' ? p : `{id:${p.id}}`)).join('') + '\r\n';
}

const CONN = '([a-z][a-z0-9]*)';

export function parseScenarios(content: string, file: string): Scenario[] {
  const scenarios: Scenario[] = [];
  let cur: Scenario | undefined;
  const lines = content.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i]!.replace(/\s+$/, '');
    const src: Source = { file, line: i + 1, text };
    const t = text.trimStart();
    if (t === '' || t.startsWith('#')) continue;
    let m: RegExpExecArray | null;
    if ((m = /^===\s*(.+)$/.exec(t))) {
      cur = { name: m[1]!.trim(), src, steps: [] };
      scenarios.push(cur);
      continue;
    }
    if (!cur) fail(src, 'step before the first "=== name" line');
    const steps = cur.steps;
    if ((m = /^sleep (\d+)$/.exec(t))) { steps.push({ kind: 'sleep', ms: Number(m[1]), src }); continue; }
    if ((m = /^~ ?([a-z0-9-]+): ?(.*)$/.exec(t))) {
      const id = m[1]!;
      if (!deliberateById(id)) fail(src, `unknown deliberate divergence "${id}" (see deliberate.ts)`);
      const prev = steps[steps.length - 1];
      if (!prev || prev.kind !== 'recv') fail(src, '"~" must follow a reading step (a: ... or a< ...)');
      if (prev.declared && prev.declared.divergence !== id) fail(src, 'one step, one deliberate divergence');
      prev.declared ??= { divergence: id, replies: [] };
      prev.declared.replies.push(parseExpected(m[2]!, src));
      continue;
    }
    if ((m = new RegExp(`^${CONN}:(\\d+)?(?: (.*))?$`).exec(t))) {
      const conn = m[1]!;
      steps.push({ kind: 'send', conn, data: [...parseTemplate(m[3] ?? '', src), '\r\n'], src });
      steps.push({ kind: 'recv', conn, count: m[2] ? Number(m[2]) : 1, timeoutMs: DEFAULT_RECV_TIMEOUT_MS, src });
      continue;
    }
    if ((m = new RegExp(`^${CONN}(>>|>)(?: (.*))?$`).exec(t))) {
      const data = parseTemplate(m[3] ?? '', src);
      steps.push({ kind: 'send', conn: m[1]!, data: m[2] === '>' ? [...data, '\r\n'] : data, src });
      continue;
    }
    if ((m = new RegExp(`^${CONN}<(?: (\\d+))?(?: (\\d+))?$`).exec(t))) {
      steps.push({ kind: 'recv', conn: m[1]!, count: m[2] ? Number(m[2]) : 1, timeoutMs: m[3] ? Number(m[3]) : DEFAULT_RECV_TIMEOUT_MS, src });
      continue;
    }
    if ((m = new RegExp(`^${CONN} silent (\\d+)$`).exec(t))) { steps.push({ kind: 'silent', conn: m[1]!, ms: Number(m[2]), src }); continue; }
    if ((m = new RegExp(`^${CONN} close$`).exec(t))) { steps.push({ kind: 'close', conn: m[1]!, src }); continue; }
    if ((m = new RegExp(`^${CONN} halfclose$`).exec(t))) { steps.push({ kind: 'halfclose', conn: m[1]!, src }); continue; }
    if ((m = new RegExp(`^${CONN} expect-closed$`).exec(t))) { steps.push({ kind: 'expect-closed', conn: m[1]!, timeoutMs: DEFAULT_RECV_TIMEOUT_MS, src }); continue; }
    fail(src, 'cannot parse this line');
  }
  for (const s of scenarios) if (s.steps.length === 0) fail(s.src, 'scenario without steps');
  return scenarios;
}

export const SCENARIO_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'scenarios');

/** All scenarios of scenarios/*.txt, in file-name order. Names must be unique. */
export function loadScenarios(dir = SCENARIO_DIR): Scenario[] {
  const all: Scenario[] = [];
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.txt')).sort()) {
    all.push(...parseScenarios(readFileSync(path.join(dir, f), 'latin1'), `scenarios/${f}`));
  }
  const seen = new Map<string, Source>();
  for (const s of all) {
    const prev = seen.get(s.name);
    if (prev) throw new DslError(`duplicate scenario name "${s.name}" (${prev.file}:${prev.line} and ${s.src.file}:${s.src.line})`);
    seen.set(s.name, s.src);
  }
  return all;
}
