/**
 * Conformance transcripts (protocol/transcripts/*.txt): single-connection
 * conversations that every client under clients/ replays against a fresh
 * server. Format (also in protocol/transcripts/README.md):
 *
 *   === scenario name
 *   C: bytes sent, escaped (\r \n \t \0 \\ \xNN; latin1)
 *   S: one whole reply (line, plus its body or blocks), escaped; {*} matches [^\r\n]*
 */
import { testShards } from '../helpers/topology.js';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Wire } from '../helpers/wire.js';

export interface Exchange { send: string; replies: string[] }
export interface Transcript { name: string; file: string; exchanges: Exchange[] }

export const WILDCARD = '{*}';

export function escapeBytes(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x0d) out += '\\r';
    else if (c === 0x0a) out += '\\n';
    else if (c === 0x09) out += '\\t';
    else if (c === 0x00) out += '\\0';
    else if (c === 0x5c) out += '\\\\';
    else if (c < 0x20 || c > 0x7e) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else out += s[i];
  }
  return out;
}

export function unescapeBytes(s: string): string {
  return s.replace(/\\(x[0-9a-fA-F]{2}|.)/g, (_m, e: string) => {
    switch (e[0]) {
      case 'r': return '\r';
      case 'n': return '\n';
      case 't': return '\t';
      case '0': return '\0';
      case '\\': return '\\';
      case 'x': return String.fromCharCode(parseInt(e.slice(1), 16));
      default: throw new Error(`unknown escape \\${e}`);
    }
  });
}

export function formatTranscripts(header: string, transcripts: Transcript[]): string {
  const out = [header.trimEnd(), ''];
  for (const t of transcripts) {
    out.push(`=== ${t.name}`);
    for (const x of t.exchanges) {
      out.push(`C: ${escapeBytes(x.send)}`);
      for (const r of x.replies) out.push(`S: ${escapeBytes(r)}`);
    }
    out.push('');
  }
  return out.join('\n');
}

export function parseTranscripts(content: string, file: string): Transcript[] {
  const all: Transcript[] = [];
  let cur: Transcript | undefined;
  for (const [i, line] of content.split('\n').entries()) {
    if (line === '' || line.startsWith('#')) continue;
    if (line.startsWith('=== ')) { cur = { name: line.slice(4), file, exchanges: [] }; all.push(cur); continue; }
    const where = `${file}:${i + 1}`;
    if (!cur) throw new Error(`${where}: a step before the first "=== name"`);
    if (line.startsWith('C: ')) cur.exchanges.push({ send: unescapeBytes(line.slice(3)), replies: [] });
    else if (line.startsWith('S: ') && cur.exchanges.length) cur.exchanges.at(-1)!.replies.push(line.slice(3));
    else throw new Error(`${where}: cannot parse ${JSON.stringify(line.slice(0, 80))}`);
  }
  return all;
}

export function loadTranscripts(dir: string): Transcript[] {
  return readdirSync(dir).filter((f) => f.endsWith('.txt')).sort()
    .flatMap((f) => parseTranscripts(readFileSync(path.join(dir, f), 'latin1'), f));
}

/**
 * Whether an actual reply (escaped) matches an expected one: literal text, where
 * each {*} stands for a run that holds no escaped CR or LF. (Not a RegExp: a
 * 64 KiB body makes one too large.)
 */
export function matchesReply(expected: string, actual: string): boolean {
  const [first, ...rest] = expected.split(WILDCARD);
  if (!actual.startsWith(first!)) return false;
  let at = first!.length;
  for (const part of rest) {
    // The run ends at the first escaped line break, so the next part starts at or before it.
    const stop = actual.slice(at).search(/\\[rn]/);
    const limit = stop < 0 ? actual.length : at + stop;
    const found = part === '' ? limit : actual.indexOf(part, at);
    if (found < 0 || found > limit) return false;
    at = found + part.length;
  }
  return at === actual.length;
}

/** Reads one whole reply: its line, and the body or blocks that the reply word announces. */
export async function readReply(w: Wire, timeoutMs: number): Promise<string> {
  const { line, body } = await w.reply(timeoutMs);
  if (body) return `${line}\r\n${body.toString('latin1')}\r\n`;
  const many = /^RESERVED-MANY (\d+)$/.exec(line);
  if (many) {
    let out = `${line}\r\n`;
    for (let k = 0; k < Number(many[1]); k++) out += await readReply(w, timeoutMs);
    return out;
  }
  return `${line}\r\n`;
}

/**
 * With several shards, list-tubes lists each shard's tubes in turn (a
 * documented divergence, PROTOCOL.md "Shards"): such runs compare YAML lists
 * as sets.
 */
const listsAsSets = testShards > 1;

/** An escaped `OK <n>` YAML list reply with its items sorted (and its byte count as it was). */
export function sortedList(reply: string): string {
  const m = /^(OK \S+\\r\\n---\\n)((?:- [^\\]*\\n)+)(\\r\\n)$/.exec(reply);
  if (!m) return reply;
  const items = m[2]!.split('\\n').filter(Boolean).sort();
  return `${m[1]}${items.map((i) => `${i}\\n`).join('')}${m[3]}`;
}

/** Replays one transcript on a fresh server; returns the first mismatch, if any. */
export async function replay(t: Transcript, port: number, timeoutMs = 3000): Promise<string | undefined> {
  const w = await Wire.connect(port);
  try {
    for (const x of t.exchanges) {
      w.send(Buffer.from(x.send, 'latin1'));
      for (const want of x.replies) {
        let got: string;
        try { got = escapeBytes(await readReply(w, timeoutMs)); } catch (e) { got = `<${(e as Error).message}>`; }
        if (!matchesReply(listsAsSets ? sortedList(want) : want, listsAsSets ? sortedList(got) : got)) return `${t.file} "${t.name}": after C: ${escapeBytes(x.send).slice(0, 200)}\n  want S: ${want}\n  got  S: ${got}`;
      }
    }
    return undefined;
  } finally {
    w.close();
  }
}
