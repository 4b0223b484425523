// Command-line parsing with beanstalkd's exact rules (prot.c: which_cmd,
// read_u32/read_u64/read_tube_name, strtoul for kick). A line arrives here
// without its CRLF; framing (line limit, bodies) lives in server/connection.ts.
import { KEY_BYTES, LIMITS, LONGEST_MATCH, MATCH_ORDER, isValidName, nameSpan, type CommandSpec } from './spec.js';

export interface ParsedCommand {
  spec: CommandSpec;
  /** Numbers as numbers (u32 and below), ids as canonical decimal strings, names as strings. */
  args: Array<number | string>;
  /** Bytes left after the last argument (only put looks at this itself). */
  trailing: boolean;
}

export const enum ParseError { BadFormat = 1, UnknownCommand = 2 }

const U32_MAX = 4294967295;
const U64_MAX = 18446744073709551615n;
const SPACE = 32;

function isDigit(c: number): boolean { return c >= 48 && c <= 57; }

/** Index after the digits starting at i (i must be a digit). */
function digitsEnd(s: string, i: number): number {
  while (i < s.length && isDigit(s.charCodeAt(i))) i++;
  return i;
}

export function matchCommand(line: string): CommandSpec | undefined {
  // Command words are case-insensitive in redstalk (beanstalkd: case-sensitive).
  const head = line.length > LONGEST_MATCH ? line.slice(0, LONGEST_MATCH).toLowerCase() : line.toLowerCase();
  for (const spec of MATCH_ORDER) if (head.startsWith(spec.match)) return spec;
  return undefined;
}

/** Parses one command line; an error value means the reply is that error. */
export function parseCommand(line: string): ParsedCommand | ParseError {
  if (line.indexOf('\0') >= 0) return ParseError.BadFormat;
  const spec = matchCommand(line);
  if (!spec) return ParseError.UnknownCommand;
  if (spec.exact && line.length !== spec.match.length) return ParseError.BadFormat;

  const args: Array<number | string> = [];
  let i = spec.match.length;
  for (const arg of spec.args) {
    switch (arg.type) {
      case 'u32': case 'seconds': case 'timeout': case 'u64': {
        while (line.charCodeAt(i) === SPACE) i++;
        if (!isDigit(line.charCodeAt(i))) return ParseError.BadFormat;
        const end = digitsEnd(line, i);
        const digits = line.slice(i, end);
        i = end;
        if (arg.type === 'u64') {
          const v = BigInt(digits);
          if (v > U64_MAX) return ParseError.BadFormat;
          args.push(v.toString());
        } else {
          // strtoumax: leading zeros are fine (00000000001 is 1); Number is exact up to 15 digits.
          const v = digits.length <= 15 ? Number(digits) : BigInt(digits) > BigInt(U32_MAX) ? Infinity : Number(digits);
          if (v > (arg.type === 'timeout' ? LIMITS.reserveTimeoutMax : U32_MAX)) return ParseError.BadFormat;
          if (v < (arg.min ?? 0) || v > (arg.max ?? Infinity)) return ParseError.BadFormat;
          args.push(v);
        }
        break;
      }
      case 'lenient-u32': {
        // strtoul: leading white space, an optional sign, digits; the value
        // wraps modulo 2^64 and is then truncated to 32 bits.
        while (i < line.length && ' \t\n\v\f\r'.includes(line[i]!)) i++;
        let negative = false;
        if (line[i] === '+' || line[i] === '-') { negative = line[i] === '-'; i++; }
        if (!isDigit(line.charCodeAt(i))) return ParseError.BadFormat;
        const end = digitsEnd(line, i);
        let v = BigInt(line.slice(i, end));
        i = end;
        if (v > U64_MAX) return ParseError.BadFormat;
        if (negative) v = (U64_MAX + 1n - v) % (U64_MAX + 1n);
        args.push(Number(v & 0xffffffffn));
        break;
      }
      case 'tube': {
        const name = line.slice(i);
        if (!isValidName(name)) return ParseError.BadFormat;
        args.push(name);
        i = line.length;
        break;
      }
      case 'name': {
        // Room and user names: tube-name rules, ending at a space or the end
        // of the line; one space separates a name from the one before it.
        if (i > spec.match.length) {
          if (line.charCodeAt(i) !== SPACE) return ParseError.BadFormat;
          i++;
        }
        const name = line.slice(i, i + nameSpan(line, i));
        if (!isValidName(name)) return ParseError.BadFormat;
        args.push(name);
        i += name.length;
        break;
      }
      case 'key': case 'choice': {
        // A word, after one space unless it is the first: a put-with key
        // (`-`: none; printable bytes but space), or one of a choice's words.
        if (i > spec.match.length) {
          if (line.charCodeAt(i) !== SPACE) return ParseError.BadFormat;
          i++;
        }
        const end = line.indexOf(' ', i);
        const word = line.slice(i, end < 0 ? line.length : end);
        if (arg.type === 'choice' ? !arg.values!.includes(word) : word.length > KEY_BYTES || !/^[\x21-\x7e]+$/.test(word)) return ParseError.BadFormat;
        args.push(word);
        i += word.length;
        break;
      }
      case 'token': {
        // A secret: the rest of the line, 1..lineBytes of any printable bytes but space.
        const token = line.slice(i);
        if (token.length === 0 || !/^[\x21-\x7e]+$/.test(token)) return ParseError.BadFormat;
        args.push(token);
        i = line.length;
        break;
      }
      case 'tube-lenient': {
        // read_tube_name: leading spaces, then a run of name characters (so no
        // space is needed after "pause-tube"). Whether the name is valid is
        // checked by the handler: beanstalkd counts the command first.
        while (line.charCodeAt(i) === SPACE) i++;
        const n = nameSpan(line, i);
        if (n === 0) return ParseError.BadFormat;
        args.push(line.slice(i, i + n));
        i += n;
        break;
      }
    }
  }
  const trailing = i < line.length;
  if (trailing && spec.trailing === 'reject' && !spec.body) return ParseError.BadFormat;
  return { spec, args, trailing };
}
