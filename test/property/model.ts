// An independent model of the wire protocol, written from protocol/commands.json
// and protocol/PROTOCOL.md (not from src/): the grammar of a command line, the
// framing of a byte stream into lines and bodies, and the reply lines the spec
// allows. The property tests check the parser and the server against it.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface ArgSpec { name: string; type: string; min?: number; max?: number; values?: string[] }
export interface CommandSpec {
  name: string;
  match: string;
  args: ArgSpec[];
  exact?: boolean;
  trailing?: 'reject' | 'ignore';
  body?: { lengthFrom: string; terminator: string };
  replies: string[];
  extension?: boolean;
}
interface Spec {
  limits: { lineBytes: number; tubeNameBytes: number; defaultMaxJobSize: number; reserveTimeoutMax: number; reserveRateMax: number };
  nameChars: string;
  errors: string[];
  replyBodies: Record<string, { lengthFrom: string; terminator: string; content: string }>;
  commands: CommandSpec[];
}

export const SPEC: Spec = JSON.parse(readFileSync(path.join(ROOT, 'protocol/commands.json'), 'utf8'));
export const COMMANDS = SPEC.commands;
export const COMMAND = new Map(COMMANDS.map((c) => [c.name, c]));
export const LINE_BYTES = SPEC.limits.lineBytes;
export const NAME_BYTES = SPEC.limits.tubeNameBytes;
export const MAX_JOB_SIZE = SPEC.limits.defaultMaxJobSize;
export const NAME_CHARS = SPEC.nameChars;

export const U32_MAX = 2n ** 32n - 1n;
export const U64_MAX = 2n ** 64n - 1n;
const TIMEOUT_MAX = BigInt(SPEC.limits.reserveTimeoutMax);

// ---------------------------------------------------------------- command lines

const NAME_CLASS = `[${NAME_CHARS.replace(/[\\\]\-^]/g, '\\$&')}]`;
const NAME_RUN = new RegExp(`^${NAME_CLASS}*`);
const LENIENT_NAME = new RegExp(`^ *(${NAME_CLASS}+)`);

/** PROTOCOL.md: 1..200 bytes of the name characters, not starting with `-`. */
export function validName(s: string): boolean {
  return s.length >= 1 && s.length <= NAME_BYTES && s[0] !== '-' && NAME_RUN.exec(s)![0].length === s.length;
}

/** PROTOCOL.md: redstalk's own commands are matched first, then beanstalkd's, in the order of commands.json. */
const MATCH_ORDER = [...COMMANDS.filter((c) => c.extension), ...COMMANDS.filter((c) => !c.extension)];

const asciiLower = (s: string) => s.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 32));

export type Verdict =
  | { error: 'BAD_FORMAT' | 'UNKNOWN_COMMAND' }
  | { command: string; args: Array<number | string>; trailing: boolean };

const BAD: Verdict = { error: 'BAD_FORMAT' };
const UNKNOWN: Verdict = { error: 'UNKNOWN_COMMAND' };

function numberMax(type: string): bigint {
  switch (type) {
    case 'u64': return U64_MAX;
    case 'timeout': return TIMEOUT_MAX;
    case 'u32': case 'seconds': return U32_MAX;
    default: throw new Error(`not a number type: ${type}`);
  }
}

/** What a command line (without its CRLF) means, by the rules of PROTOCOL.md. */
export function modelParse(line: string): Verdict {
  if (line.includes('\0')) return BAD;
  const spec = MATCH_ORDER.find((c) => asciiLower(line.slice(0, c.match.length)) === c.match);
  if (!spec) return UNKNOWN;
  if (spec.exact && line.length !== spec.match.length) return BAD;
  let rest = line.slice(spec.match.length);
  const args: Array<number | string> = [];
  for (const [k, a] of spec.args.entries()) {
    switch (a.type) {
      case 'u32': case 'seconds': case 'timeout': case 'u64': {
        // Any number of spaces, then decimal digits (leading zeros allowed), in range.
        const m = / *([0-9]+)/y.exec(rest);
        if (!m) return BAD;
        const v = BigInt(m[1]!);
        if (v > numberMax(a.type)) return BAD;
        if (a.min !== undefined && v < BigInt(a.min)) return BAD;
        if (a.max !== undefined && v > BigInt(a.max)) return BAD;
        args.push(a.type === 'u64' ? v.toString() : Number(v));
        rest = rest.slice(m[0].length);
        break;
      }
      case 'lenient-u32': {
        // C's strtoul: white space, a sign, digits; wraps modulo 2^64 (above it: ERANGE); then 32 bits.
        const m = /[ \t\n\v\f\r]*([+-]?)([0-9]+)/y.exec(rest);
        if (!m) return BAD;
        let v = BigInt(m[2]!);
        if (v > U64_MAX) return BAD;
        if (m[1] === '-') v = (U64_MAX + 1n - v) % (U64_MAX + 1n);
        args.push(Number(v % (U32_MAX + 1n)));
        rest = rest.slice(m[0].length);
        break;
      }
      case 'tube':
        // The whole rest of the line is the name.
        if (!validName(rest)) return BAD;
        args.push(rest);
        rest = '';
        break;
      case 'name': {
        // Room and user names end at a space or the end of the line; one space before each but the first.
        if (k > 0) {
          if (rest[0] !== ' ') return BAD;
          rest = rest.slice(1);
        }
        const name = NAME_RUN.exec(rest)![0];
        if (!validName(name)) return BAD;
        args.push(name);
        rest = rest.slice(name.length);
        break;
      }
      case 'token':
        // auth: the rest of the line, printable bytes without spaces (at least one).
        if (!/^[\x21-\x7e]+$/.test(rest)) return BAD;
        args.push(rest);
        rest = '';
        break;
      case 'key': case 'choice': {
        // put-with's key (printable bytes but space, at most 128) and a choice's words: end at a space; one space before each but the first.
        if (k > 0) {
          if (rest[0] !== ' ') return BAD;
          rest = rest.slice(1);
        }
        const word = /^[^ ]*/.exec(rest)![0];
        const ok = a.type === 'choice' ? a.values!.includes(word) : /^[\x21-\x7e]{1,128}$/.test(word);
        if (!ok) return BAD;
        args.push(word);
        rest = rest.slice(word.length);
        break;
      }
      case 'tube-lenient': {
        // pause-tube: spaces, then a run of name characters (validity is the handler's: BAD_FORMAT there).
        const m = LENIENT_NAME.exec(rest);
        if (!m) return BAD;
        args.push(m[1]!);
        rest = rest.slice(m[0].length);
        break;
      }
      default:
        throw new Error(`commands.json has an argument type the model does not know: ${a.type}`);
    }
  }
  const trailing = rest.length > 0;
  if (trailing && spec.trailing === 'reject' && !spec.body) return BAD;
  return { command: spec.name, args, trailing };
}

/** A command that may wait for a job (reserve, or a timeout above 0). */
export function isBlocking(v: Verdict): boolean {
  if (!('command' in v)) return false;
  if (v.command === 'reserve') return true;
  if (v.command === 'reserve-with-timeout') return (v.args[0] as number) > 0;
  if (v.command === 'reserve-many') return (v.args[1] as number) > 0;
  return false;
}

// ---------------------------------------------------------------- replies

/** One reply template of commands.json ("INSERTED <id>"), as a matcher of reply lines. */
interface Template { text: string; word: string; re: RegExp; body: boolean; many: boolean }

function template(text: string): Template {
  const [word, ...params] = text.split(' ');
  const parts = params.map((p) => (p === '<tube>' ? `(${NAME_CLASS}{1,${NAME_BYTES}})` : '(0|[1-9][0-9]*)'));
  const re = new RegExp(`^${[word, ...parts].join(' ')}$`);
  const shape = SPEC.replyBodies[text];
  return { text, word: word!, re, body: !!shape && shape.content !== 'reserved-jobs', many: shape?.content === 'reserved-jobs' };
}

const TEMPLATES = new Map<string, Template>();
for (const t of [...SPEC.errors, ...COMMANDS.flatMap((c) => c.replies)]) if (!TEMPLATES.has(t)) TEMPLATES.set(t, template(t));

/** Every reply line the spec allows, from any command. */
export const ALL_REPLIES: readonly string[] = [...TEMPLATES.keys()];
export const STORE_ERRORS: readonly string[] = SPEC.errors.filter((e) => e !== 'BAD_FORMAT' && e !== 'UNKNOWN_COMMAND');

/** Lines followed by a body of <bytes> bytes and CRLF (RESERVED, FOUND, OK <bytes>). */
const BODY_LINE = /^(?:RESERVED (?:0|[1-9][0-9]*)|FOUND (?:0|[1-9][0-9]*)|OK) (0|[1-9][0-9]*)$/;
const MANY_LINE = /^RESERVED-MANY (0|[1-9][0-9]*)$/;

export interface ReplyUnit { line: string; body?: Buffer; jobs?: ReplyUnit[] }

/**
 * Splits what a connection received into replies: a line, its body, and for
 * RESERVED-MANY the RESERVED replies it announces. `rest` is an incomplete tail.
 */
export function splitReplies(buf: Buffer): { units: ReplyUnit[]; rest: Buffer; malformed?: string } {
  const units: ReplyUnit[] = [];
  let pos = 0;
  const one = (): ReplyUnit | 'more' | string => {
    const end = buf.indexOf('\r\n', pos);
    if (end < 0) return 'more';
    const line = buf.toString('latin1', pos, end);
    let p = end + 2;
    const b = BODY_LINE.exec(line);
    if (b) {
      const n = Number(b[1]);
      if (buf.length < p + n + 2) return 'more';
      if (buf[p + n] !== 13 || buf[p + n + 1] !== 10) return `body of "${line}" not followed by CRLF`;
      const body = Buffer.from(buf.subarray(p, p + n));
      pos = p + n + 2;
      return { line, body };
    }
    pos = p;
    const m = MANY_LINE.exec(line);
    if (!m) return { line };
    const jobs: ReplyUnit[] = [];
    for (let i = 0; i < Number(m[1]); i++) {
      const j = one();
      if (typeof j === 'string') return j;
      if (!j.line.startsWith('RESERVED ')) return `RESERVED-MANY block ${i} is "${j.line}"`;
      jobs.push(j);
    }
    return { line, jobs };
  };
  for (;;) {
    const start = pos;
    const u = one();
    if (u === 'more') { pos = start; break; }
    if (typeof u === 'string') return { units, rest: buf.subarray(start), malformed: u };
    units.push(u);
  }
  return { units, rest: buf.subarray(pos) };
}

/** Whether a reply is one of these templates (and its body, if any, is well formed). */
export function replyIn(u: ReplyUnit, allowed: readonly string[]): string | null {
  for (const text of allowed) {
    const t = TEMPLATES.get(text);
    if (!t) throw new Error(`unknown reply template ${text}`);
    const m = t.re.exec(u.line);
    if (!m) continue;
    if (t.body !== (u.body !== undefined)) continue;
    if (t.many !== (u.jobs !== undefined)) continue;
    if (t.word === 'OK' && u.body && !u.body.toString('latin1').startsWith('---\n')) return null;
    return text;
  }
  return null;
}

// ---------------------------------------------------------------- framing

/** What the server should answer to one unit of input. */
export interface Expect {
  /** The reply templates allowed. */
  allowed: readonly string[];
  /** The input it answers (a line, or a description), for messages. */
  input: string;
  verdict?: Verdict;
  /** An exact reply line, when the model knows it (USING <tube> after use). */
  exact?: string;
}

export interface Framing {
  expects: Expect[];
  /** Bytes of the stream used up by complete units. */
  consumed: number;
  /** quit was read: the server closes, and reads nothing after it. */
  quit: boolean;
  /** A reserve that may wait (reserve, or a timeout > 0). */
  blocking: boolean;
  /** Overlong lines whose end the server is known to miss (see server.test.ts, "overlong lines"). */
  knownBug: string | null;
  /** Commands the model read (lines, including overlong ones), by kind. */
  lines: number;
}

const exactly = (word: string, input: string, verdict?: Verdict): Expect => ({ allowed: [word], input, verdict });

/**
 * The server's framing as PROTOCOL.md states it, over the whole input of one
 * connection: lines end at the first CR if an LF follows it, within 224
 * bytes; a longer line (or one blocked by a lone CR) is discarded up to the
 * next CRLF and answered with one BAD_FORMAT; put bodies are <bytes> + 2
 * bytes, thrown away with JOB_TOO_BIG above the maximum job size;
 * EXPECTED_CRLF when they do not end in CRLF; a put line answered BAD_FORMAT
 * leaves its body unread. At the end of the input (EOF) a partial unit gets
 * no reply.
 */
export function frame(stream: Buffer, opts: { overlong?: 'documented' | 'as-implemented'; maxJobSize?: number } = {}): Framing {
  const maxJobSize = opts.maxJobSize ?? MAX_JOB_SIZE;
  const f: Framing = { expects: [], consumed: 0, quit: false, blocking: false, knownBug: null, lines: 0 };
  let pos = 0;
  while (pos < stream.length) {
    const window = stream.subarray(pos, pos + LINE_BYTES);
    const cr = window.indexOf(13);
    if (cr >= 0 && cr + 1 < window.length && window[cr + 1] === 10) {
      const line = stream.toString('latin1', pos, pos + cr);
      const next = pos + cr + 2;
      f.lines++;
      const step = command(f, stream, line, next, maxJobSize);
      if (step < 0) break;
      pos = step;
      f.consumed = pos;
      if (f.quit) break;
      continue;
    }
    if (window.length < LINE_BYTES) break; // no line end yet: at EOF, dropped
    // Too long (or blocked by a lone CR): discard through the next CRLF that
    // ends at or after the 224th byte, then one BAD_FORMAT.
    const crlf = stream.indexOf('\r\n', pos + LINE_BYTES - 1);
    const bug = crlf < 0 ? null : missedLineEnd(stream, pos, crlf);
    f.knownBug ??= bug;
    const end = bug && opts.overlong === 'as-implemented' ? discardAsImplemented(stream, pos) : crlf < 0 ? -1 : crlf + 2;
    if (end < 0) break;
    f.lines++;
    f.expects.push(exactly('BAD_FORMAT', describe(stream.subarray(pos, end))));
    pos = end;
    f.consumed = pos;
  }
  return f;
}

/**
 * Where the discarding of an overlong line ends, as beanstalkd does it
 * (STATE_WANT_ENDLINE) and redstalk after it (connection.ts, Mode.Discard):
 * after the first 224 bytes, 224-byte windows, each ending at its first CR if
 * an LF follows it; a line end across two windows is missed. -1: it waits for
 * more input. ("knownBug" marks where this differs from a plain "discard up
 * to the next CRLF"; the "overlong lines" property compares with beanstalkd.)
 */
function discardAsImplemented(stream: Buffer, start: number): number {
  for (let p = start + LINE_BYTES; ; p += LINE_BYTES) {
    const w = stream.subarray(p, p + LINE_BYTES);
    const cr = w.indexOf(13);
    if (cr >= 0 && cr + 1 < w.length && w[cr + 1] === 10) return p + cr + 2;
    if (w.length < LINE_BYTES) return -1;
  }
}

/**
 * The two ways redstalk (connection.ts, Mode.Discard) is known to lose the end
 * of an overlong line: it scans for the line end 224 bytes at a time and looks
 * only at the first CR of each window, so it misses a CRLF whose CR is the last
 * byte of a window, or one after a lone CR in the same window.
 */
function missedLineEnd(stream: Buffer, start: number, crlf: number): string | null {
  const offset = crlf - start;
  if (offset % LINE_BYTES === LINE_BYTES - 1) return `line end at byte ${offset} of an overlong line (last byte of a 224-byte window)`;
  const windowStart = start + offset - (offset % LINE_BYTES);
  const lone = stream.indexOf(13, windowStart);
  if (lone >= 0 && lone < crlf) return `line end at byte ${offset} of an overlong line follows a lone CR at byte ${lone - start}`;
  return null;
}

/** One command line read; returns where the next unit starts, or -1 when input ends inside this one. */
function command(f: Framing, stream: Buffer, line: string, next: number, maxJobSize: number): number {
  const v = modelParse(line);
  const input = describe(line);
  if ('error' in v) { f.expects.push(exactly(v.error, input, v)); return next; }
  const spec = COMMAND.get(v.command)!;
  if (spec.body) {
    const bytes = v.args[spec.args.findIndex((a) => a.name === spec.body!.lengthFrom)] as number;
    if (bytes > maxJobSize) {
      if (next + bytes + 2 > stream.length) return -1;
      f.expects.push(exactly('JOB_TOO_BIG', input, v));
      return next + bytes + 2;
    }
    if (v.trailing) { f.expects.push(exactly('BAD_FORMAT', input, v)); return next; }
    if (next + bytes + 2 > stream.length) return -1;
    const terminated = stream[next + bytes] === 13 && stream[next + bytes + 1] === 10;
    const allowed = terminated
      ? [...spec.replies.filter((r) => r !== 'EXPECTED_CRLF' && r !== 'JOB_TOO_BIG'), ...STORE_ERRORS]
      : ['EXPECTED_CRLF', ...STORE_ERRORS];
    f.expects.push({ allowed, input: `${input} + ${bytes + 2} body bytes${terminated ? '' : ' (no CRLF)'}`, verdict: v });
    return next + bytes + 2;
  }
  if (v.command === 'quit') { f.quit = true; return next; }
  if (isBlocking(v)) f.blocking = true;
  const tubeLenient = spec.args.findIndex((a) => a.type === 'tube-lenient');
  if (tubeLenient >= 0 && !validName(v.args[tubeLenient] as string)) {
    f.expects.push(exactly('BAD_FORMAT', input, v)); // pause-tube checks the name itself
    return next;
  }
  if (v.command === 'tube-set' && v.args[1] === 'reserve-rate' && (v.args[2] as number) > SPEC.limits.reserveRateMax) {
    f.expects.push(exactly('BAD_FORMAT', input, v)); // tube-set checks the rate itself
    return next;
  }
  const e: Expect = { allowed: [...spec.replies, ...STORE_ERRORS], input, verdict: v };
  if (v.command === 'use') e.exact = `USING ${v.args[0]}`;
  f.expects.push(e);
  return next;
}

/** Printable form of input bytes, shortened. */
export function describe(data: string | Buffer): string {
  const s = typeof data === 'string' ? data : data.toString('latin1');
  const j = JSON.stringify(s.length > 120 ? `${s.slice(0, 80)}…(${s.length} bytes)…${s.slice(-30)}` : s);
  return j;
}

/**
 * Checks replies against the model's expectations, in order. `complete`: the
 * connection was closed by the server after EOF, so every expected reply must
 * be there; otherwise the replies must be a prefix. Returns a message, or null.
 */
export function checkReplies(expects: readonly Expect[], units: readonly ReplyUnit[], complete: boolean): string | null {
  if (units.length > expects.length) {
    return `${units.length} replies to ${expects.length} commands; extra: ${units.slice(expects.length).map((u) => JSON.stringify(u.line)).join(', ')}`;
  }
  for (const [i, u] of units.entries()) {
    const e = expects[i]!;
    const got = replyIn(u, e.allowed);
    if (!got) return `reply ${i} to ${e.input}: ${JSON.stringify(u.line)}, allowed: ${e.allowed.join(' | ')}`;
    if (e.exact && u.line !== e.exact && !STORE_ERRORS.includes(u.line)) return `reply ${i} to ${e.input}: ${JSON.stringify(u.line)}, expected ${JSON.stringify(e.exact)}`;
    if (u.jobs) {
      const count = e.verdict && 'command' in e.verdict ? (e.verdict.args[0] as number) : Infinity;
      if (u.jobs.length < 1 || u.jobs.length > count) return `reply ${i} to ${e.input}: ${u.line} (count ${count})`;
      for (const j of u.jobs) if (!replyIn(j, ['RESERVED <id> <bytes>'])) return `reply ${i} to ${e.input}: block ${JSON.stringify(j.line)}`;
    }
  }
  if (complete && units.length < expects.length) {
    return `${units.length} replies to ${expects.length} commands; first unanswered: ${expects[units.length]!.input}`;
  }
  return null;
}
