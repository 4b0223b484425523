// fast-check generators of protocol input: command lines of every command of
// commands.json (arguments in and out of range, odd spacing, leading zeros,
// case), and mutations of them.
import fc from 'fast-check';
import { COMMANDS, NAME_BYTES, NAME_CHARS, SPEC, U32_MAX, U64_MAX, type ArgSpec, type CommandSpec } from './model.js';

export const latin1 = (b: Uint8Array) => Buffer.from(b).toString('latin1');

/** Any bytes, as the latin1 string the server decodes a line to. */
export const anyBytes = (maxLength: number) => fc.uint8Array({ maxLength }).map(latin1);

/** Pieces that make odd input likely: line ends, NULs, spaces, digits, signs, command words. */
const PIECES = ['\r', '\n', '\r\n', '\0', ' ', '  ', '\t', '\v', '0', '1', '9', '00', '-', '+', 'x', 'Z', '(', ';', 'é', '\xff'];
export const pieces = (maxLength: number, commands: readonly CommandSpec[] = COMMANDS) =>
  fc.array(fc.constantFrom(...PIECES, ...commands.map((c) => c.match)), { maxLength }).map((p) => p.join(''));

const rangeMax = (a: ArgSpec): bigint => {
  const typeMax = a.type === 'u64' ? U64_MAX : a.type === 'timeout' ? BigInt(SPEC.limits.reserveTimeoutMax) : U32_MAX;
  return a.max !== undefined && BigInt(a.max) < typeMax ? BigInt(a.max) : typeMax;
};

/** A decimal argument: in range (small or anywhere), at the bounds, leading zeros, or not a number. */
export function numberToken(a: ArgSpec): fc.Arbitrary<string> {
  const lo = BigInt(a.min ?? 0);
  const hi = rangeMax(a);
  const inRange = fc.oneof(
    fc.bigInt({ min: lo, max: hi < lo + 1000n ? hi : lo + 1000n }),
    fc.bigInt({ min: lo, max: hi }),
  );
  const bounds = [0n, 1n, lo - 1n, lo, hi, hi + 1n, U32_MAX, U32_MAX + 1n, 2n ** 31n - 1n, 2n ** 31n, U64_MAX, U64_MAX + 1n, 10n ** 30n]
    .filter((v) => v >= 0n);
  return fc.oneof(
    { weight: 6, arbitrary: inRange.map(String) },
    { weight: 3, arbitrary: fc.constantFrom(...bounds).map(String) },
    { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 1, max: 25 }), inRange).map(([z, v]) => '0'.repeat(z) + v) },
    { weight: 1, arbitrary: fc.bigInt({ min: 0n, max: 10n ** 45n }).map(String) },
    { weight: 1, arbitrary: fc.constantFrom('-1', '+1', '-0', '0x10', '1e3', '1.5', '', 'abc', '\t1', '\xb9', '\u0663') },
  );
}

/** kick's bound, read like strtoul: also white space and a sign before it. */
const lenientToken = (a: ArgSpec) => fc.tuple(
  fc.constantFrom('', '', '', ' ', '\t', ' \v\f'),
  fc.constantFrom('', '', '', '+', '-'),
  numberToken({ ...a, type: 'u64' }),
).map((p) => p.join(''));

const nameChar = fc.constantFrom(...NAME_CHARS);

/** Tube and room names: valid short ones, 199..201 bytes, a leading '-', bad bytes, empty. */
export const nameToken: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: nameChar, minLength: 1, maxLength: 12 }) },
  { weight: 2, arbitrary: fc.constantFrom('default', 'a', 'x-y', 'A+B/c;d.e$f_(g)', '0') },
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: NAME_BYTES - 2, max: NAME_BYTES + 3 }), nameChar).map(([n, c]) => c.repeat(n)) },
  { weight: 1, arbitrary: fc.string({ unit: nameChar, maxLength: 6 }).map((s) => `-${s}`) },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.string({ unit: nameChar, maxLength: 6 }), fc.constantFrom(' ', '!', '\t', '\0', 'é', '*', '\r', '\n', ' x'), fc.string({ unit: nameChar, maxLength: 6 }))
      .map((p) => p.join('')),
  },
  { weight: 1, arbitrary: fc.constant('') },
);

/** auth tokens: printable bytes (some long), or with a space, a control byte, latin1 beyond ASCII, empty. */
const printable = fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c));
export const tokenToken: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: printable, minLength: 1, maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: printable, minLength: 200, maxLength: 260 }) },
  {
    weight: 2,
    arbitrary: fc.tuple(fc.string({ unit: printable, maxLength: 8 }), fc.constantFrom(' ', '\t', '\0', '\x7f', '\xe9', '\r'), fc.string({ unit: printable, maxLength: 8 }))
      .map((p) => p.join('')),
  },
  { weight: 1, arbitrary: fc.constant('') },
);

/** put-with keys: printable words (`-`, one at the 128-byte limit, one over it), or with a space or a byte beyond printable. */
const keyToken: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: printable, minLength: 1, maxLength: 20 }) },
  { weight: 1, arbitrary: fc.constantFrom('-', 'k'.repeat(128), 'k'.repeat(129)) },
  { weight: 1, arbitrary: tokenToken },
);

/** A choice's words, in other cases, cut short, or none. */
const choiceToken = (values: readonly string[]): fc.Arbitrary<string> => fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...values) },
  { weight: 1, arbitrary: fc.constantFrom(...values.flatMap((v) => [v.toUpperCase(), v.slice(0, -1), `${v}x`]), '') },
);

export interface LineOptions {
  /** Job ids (u64 arguments). */
  id?: fc.Arbitrary<string>;
  /** Tube names (use, watch, ignore, stats-tube, pause-tube). */
  tube?: fc.Arbitrary<string>;
  /** Room and user names. */
  name?: fc.Arbitrary<string>;
  /** Tokens for reserve timeouts (the server tests keep them from waiting). */
  timeout?: fc.Arbitrary<string>;
  /** Only these commands. */
  commands?: readonly CommandSpec[];
}

const casing = (word: string) => fc.oneof(
  { weight: 6, arbitrary: fc.constant(word) },
  { weight: 1, arbitrary: fc.constant(word.toUpperCase()) },
  { weight: 2, arbitrary: fc.array(fc.boolean(), { minLength: word.length, maxLength: word.length }).map((up) => [...word].map((c, i) => (up[i] ? c.toUpperCase() : c)).join('')) },
  { weight: 1, arbitrary: fc.constant(word.trimEnd()) }, // the command word without its space
);

const separator = fc.oneof({ weight: 12, arbitrary: fc.constant(' ') }, { weight: 1, arbitrary: fc.constantFrom('', '  ', '   ', '\t', '  \t') });
const lead = fc.oneof({ weight: 10, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom(' ', '  ', '\t') });
const trailingJunk = fc.oneof(
  { weight: 12, arbitrary: fc.constant('') },
  { weight: 2, arbitrary: fc.constantFrom(' ', '  ', 'x', ' 1', '\t', '\0') },
  { weight: 1, arbitrary: pieces(4) },
);

/** One command line (no CRLF) for a spec: its word, arguments, separators, maybe too few or too many. */
export function commandOf(spec: CommandSpec, opts: LineOptions = {}): fc.Arbitrary<string> {
  const argToken = (a: ArgSpec): fc.Arbitrary<string> => {
    switch (a.type) {
      case 'u64': return opts.id ?? numberToken(a);
      case 'timeout': return opts.timeout ?? numberToken(a);
      case 'u32': case 'seconds': return numberToken(a);
      case 'lenient-u32': return lenientToken(a);
      case 'tube': case 'tube-lenient': return opts.tube ?? nameToken;
      case 'name': return opts.name ?? nameToken;
      case 'token': return tokenToken;
      case 'key': return keyToken;
      case 'choice': return choiceToken(a.values!);
      default: throw new Error(`no generator for argument type ${a.type}`);
    }
  };
  const n = spec.args.length;
  const args = fc.tuple(...spec.args.map(argToken), ...spec.args.map(() => separator));
  const arity = fc.oneof(
    { weight: 10, arbitrary: fc.constant(n) },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: n }) },
    { weight: 1, arbitrary: fc.integer({ min: n + 1, max: n + 2 }) },
  );
  return fc.tuple(casing(spec.match), lead, args, arity, numberToken({ name: 'extra', type: 'u32' }), trailingJunk).map(([word, pre, parts, count, extra, junk]) => {
    const tokens = parts.slice(0, n) as string[];
    const seps = parts.slice(n) as string[];
    let line = word + (n > 0 ? pre : '');
    for (let i = 0; i < Math.min(count, n); i++) line += (i > 0 ? seps[i]! : '') + tokens[i]!;
    for (let i = n; i < count; i++) line += ' ' + extra;
    return line + junk;
  });
}

/** A command line of any command of commands.json. */
export function commandLine(opts: LineOptions = {}): fc.Arbitrary<string> {
  return fc.oneof(...(opts.commands ?? COMMANDS).map((spec) => commandOf(spec, opts)));
}

/** A line changed at one place: cut short, a NUL, a byte in, a byte out, a lone CR, padded past 224 bytes. */
export function mutated(line: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc.tuple(line, fc.nat(), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 1, max: 2000 }), fc.constantFrom('x', ' ', '0', 'a', '\r'))
    .chain(([l, at, byte, pad, fill]) => {
      const i = l.length === 0 ? 0 : at % (l.length + 1);
      const c = String.fromCharCode(byte);
      return fc.constantFrom(
        l.slice(0, i),
        l.slice(0, i) + '\0' + l.slice(i),
        l.slice(0, i) + c + l.slice(i),
        l.slice(0, i) + l.slice(i + 1),
        l.slice(0, i) + '\r' + l.slice(i),
        l + fill.repeat(pad),
        fill.repeat(pad) + l,
      );
    });
}
