// Reply words as preallocated buffers, and encoders for replies with values.

function word(w: string): Buffer { return Buffer.from(`${w}\r\n`, 'latin1'); }

export const REPLY = {
  BAD_FORMAT: word('BAD_FORMAT'),
  UNKNOWN_COMMAND: word('UNKNOWN_COMMAND'),
  EXPECTED_CRLF: word('EXPECTED_CRLF'),
  JOB_TOO_BIG: word('JOB_TOO_BIG'),
  DRAINING: word('DRAINING'),
  OUT_OF_MEMORY: word('OUT_OF_MEMORY'),
  INTERNAL_ERROR: word('INTERNAL_ERROR'),
  NOT_FOUND: word('NOT_FOUND'),
  NOT_IGNORED: word('NOT_IGNORED'),
  DEADLINE_SOON: word('DEADLINE_SOON'),
  TIMED_OUT: word('TIMED_OUT'),
  DELETED: word('DELETED'),
  RELEASED: word('RELEASED'),
  BURIED: word('BURIED'),
  TOUCHED: word('TOUCHED'),
  KICKED: word('KICKED'),
  PAUSED: word('PAUSED'),
} as const;

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
