// Reply words as preallocated buffers, taken from protocol/commands.json
// (every reply and error word it lists), and encoders for replies with values.
import { PROTOCOL } from './spec.js';

/** Every fixed reply word the spec defines: errors, and replies without values. */
export const SPEC_WORDS: ReadonlySet<string> = new Set([
  ...PROTOCOL.errors,
  ...PROTOCOL.commands.flatMap((c) => c.replies).filter((r) => !r.includes(' ')),
]);

const WORDS = [
  'BAD_FORMAT', 'UNKNOWN_COMMAND', 'EXPECTED_CRLF', 'JOB_TOO_BIG', 'DRAINING', 'OUT_OF_MEMORY',
  'INTERNAL_ERROR', 'NOT_FOUND', 'NOT_IGNORED', 'DEADLINE_SOON', 'TIMED_OUT', 'DELETED',
  'RELEASED', 'BURIED', 'TOUCHED', 'KICKED', 'PAUSED',
  // waiting rooms, auth (extensions)
  'ENTERED', 'READY', 'LEFT', 'OK', 'UNAUTHORIZED',
] as const;

export type ReplyWord = (typeof WORDS)[number];

export const REPLY = Object.fromEntries(WORDS.map((w) => {
  if (!SPEC_WORDS.has(w)) throw new Error(`reply word ${w} is not in protocol/commands.json`);
  return [w, Buffer.from(`${w}\r\n`, 'latin1')];
})) as Record<ReplyWord, Buffer>;

export function line(text: string): Buffer { return Buffer.from(`${text}\r\n`, 'latin1'); }

const CRLF = Buffer.from('\r\n');

/** `<WORD> <id> <bytes>\r\n<body>\r\n` (RESERVED / FOUND). */
export function jobReply(wordText: 'RESERVED' | 'FOUND', id: string, body: Buffer): Buffer[] {
  return [Buffer.from(`${wordText} ${id} ${body.length}\r\n`, 'latin1'), body, CRLF];
}

/** `OK <bytes>\r\n<yaml>\r\n`. */
export function okReply(yaml: string): Buffer {
  const data = Buffer.from(yaml, 'latin1');
  return Buffer.concat([Buffer.from(`OK ${data.length}\r\n`, 'latin1'), data, CRLF]);
}
