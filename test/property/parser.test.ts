// Property: the command-line parser (src/protocol/parser.ts) never throws, and
// its verdict agrees with an independent model of the grammar written from
// protocol/commands.json and PROTOCOL.md (./model.ts), over generated lines:
// every command with arguments in and out of range, odd spacing, leading
// zeros, case; the same lines cut short, with NULs and stray bytes, padded past
// 224 bytes; and arbitrary bytes. PROPERTY_FULL=1 runs ten times as many.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ParseError, parseCommand } from '../../src/protocol/parser.js';
import { anyBytes, commandLine, mutated, pieces } from './arbitraries.js';
import { op } from './hostile.js';
import { COMMANDS, frame, modelParse, type Verdict } from './model.js';

const SCALE = process.env.PROPERTY_FULL ? 10 : 1;
const RUNS = { commands: 40_000, mutated: 30_000, bytes: 20_000, prefixed: 15_000, unicode: 5_000, framing: 1_000 };
const total = Object.values(RUNS).reduce((a, b) => a + b, 0) * SCALE;

/** The parser's answer in the model's terms. */
function parserVerdict(line: string): Verdict {
  const r = parseCommand(line);
  if (r === ParseError.BadFormat) return { error: 'BAD_FORMAT' };
  if (r === ParseError.UnknownCommand) return { error: 'UNKNOWN_COMMAND' };
  return { command: r.spec.name, args: r.args, trailing: r.trailing };
}

const tally = new Map<string, number>();
const count = (v: Verdict) => {
  const k = 'error' in v ? v.error : v.command;
  tally.set(k, (tally.get(k) ?? 0) + 1);
};

function agrees(line: string): void {
  const expected = modelParse(line);
  count(expected);
  expect(parserVerdict(line), JSON.stringify(line)).toEqual(expected);
}

describe(`parser vs the grammar model (${total} generated lines)`, () => {
  it('agrees with the model on the examples of PROTOCOL.md', () => {
    const cases: Array<[string, Verdict]> = [
      ['reservex', { error: 'BAD_FORMAT' }],
      ['statsx', { error: 'BAD_FORMAT' }],
      ['quitxyz', { command: 'quit', args: [], trailing: true }],
      ['pause-tubedefault 0', { command: 'pause-tube', args: ['default', 0], trailing: false }],
      ['use', { error: 'UNKNOWN_COMMAND' }],
      ['stats-room x', { command: 'stats-room', args: ['x'], trailing: false }],
      ['list-roomsx', { error: 'BAD_FORMAT' }],
      ['delete +1', { error: 'BAD_FORMAT' }],
      ['delete -1', { error: 'BAD_FORMAT' }],
      ['delete 0x1', { error: 'BAD_FORMAT' }],
      ['delete 00000000001', { command: 'delete', args: ['1'], trailing: false }],
      ['delete    18446744073709551615', { command: 'delete', args: ['18446744073709551615'], trailing: false }],
      ['delete 18446744073709551616', { error: 'BAD_FORMAT' }],
      ['put 4294967295 0 0 5', { command: 'put', args: [4294967295, 0, 0, 5], trailing: false }],
      ['put 4294967296 0 0 5', { error: 'BAD_FORMAT' }],
      ['put 0 0 1 4294967295', { command: 'put', args: [0, 0, 1, 4294967295], trailing: false }],
      ['put 0 0 1 5 x', { command: 'put', args: [0, 0, 1, 5], trailing: true }],
      ['reserve-with-timeout 2147483647', { command: 'reserve-with-timeout', args: [2147483647], trailing: false }],
      ['reserve-with-timeout 2147483648', { error: 'BAD_FORMAT' }],
      ['reserve-with-timeout 5 junk', { command: 'reserve-with-timeout', args: [5], trailing: true }],
      ['kick -1', { command: 'kick', args: [4294967295], trailing: false }],
      ['kick \t+7x', { command: 'kick', args: [7], trailing: true }],
      ['kick 4294967296', { command: 'kick', args: [0], trailing: false }],
      ['kick 18446744073709551616', { error: 'BAD_FORMAT' }],
      ['PUT 1 2 3 4', { command: 'put', args: [1, 2, 3, 4], trailing: false }],
      ['USE Foo', { command: 'use', args: ['Foo'], trailing: false }],
      ['use -x', { error: 'BAD_FORMAT' }],
      [`use ${'a'.repeat(200)}`, { command: 'use', args: ['a'.repeat(200)], trailing: false }],
      [`use ${'a'.repeat(201)}`, { error: 'BAD_FORMAT' }],
      ['use a b', { error: 'BAD_FORMAT' }],
      ['list-tube-used\0', { error: 'BAD_FORMAT' }],
      ['\0nonsense', { error: 'BAD_FORMAT' }],
      ['reserve-many 0 0', { error: 'BAD_FORMAT' }],
      ['reserve-many 1000 0', { command: 'reserve-many', args: [1000, 0], trailing: false }],
      ['reserve-many 1001 0', { error: 'BAD_FORMAT' }],
      ['enter lobby ann', { command: 'enter', args: ['lobby', 'ann'], trailing: false }],
      ['enter lobby  ann', { error: 'BAD_FORMAT' }],
      ['enter lobby ann ', { error: 'BAD_FORMAT' }],
      ['room-config lobby 2 30 120 30', { command: 'room-config', args: ['lobby', 2, 30, 120, 30], trailing: false }],
      ['room-config lobby 0 30 120 30', { error: 'BAD_FORMAT' }],
      ['pause-room lobby 2', { error: 'BAD_FORMAT' }],
      ['auth s3cr3t!~', { command: 'auth', args: ['s3cr3t!~'], trailing: false }],
      ['AUTH x', { command: 'auth', args: ['x'], trailing: false }],
      ['auth a b', { error: 'BAD_FORMAT' }],
      ['auth ', { error: 'BAD_FORMAT' }],
      ['auth', { error: 'UNKNOWN_COMMAND' }],
    ];
    for (const [line, verdict] of cases) {
      expect(modelParse(line), `model: ${JSON.stringify(line)}`).toEqual(verdict);
      expect(parserVerdict(line), `parser: ${JSON.stringify(line)}`).toEqual(verdict);
    }
  });

  it(`command lines of every command (${RUNS.commands * SCALE})`, () => {
    fc.assert(fc.property(commandLine(), (line) => agrees(line)), { numRuns: RUNS.commands * SCALE });
    // The generator reaches every command, both accepted and refused.
    for (const c of COMMANDS) expect(tally.get(c.name) ?? 0, `${c.name} accepted`).toBeGreaterThan(50 * SCALE);
    expect(tally.get('BAD_FORMAT')).toBeGreaterThan(RUNS.commands * SCALE * 0.1);
    expect(tally.get('UNKNOWN_COMMAND')).toBeGreaterThan(0);
  });

  it(`the same lines cut short, with a NUL, a byte in or out, a lone CR, or padded past 224 bytes (${RUNS.mutated * SCALE})`, () => {
    fc.assert(fc.property(mutated(commandLine()), (line) => agrees(line)), { numRuns: RUNS.mutated * SCALE });
  });

  it(`arbitrary bytes (${RUNS.bytes * SCALE})`, () => {
    fc.assert(fc.property(fc.oneof(anyBytes(300), pieces(40)), (line) => agrees(line)), { numRuns: RUNS.bytes * SCALE });
  });

  it(`a command word, then anything (${RUNS.prefixed * SCALE})`, () => {
    const word = fc.constantFrom(...COMMANDS.map((c) => c.match), ...COMMANDS.map((c) => c.match.toUpperCase()));
    const tail = fc.oneof(anyBytes(60), pieces(20), fc.string({ unit: fc.constantFrom(' ', '0', '1', '9', 'a', '-'), maxLength: 30 }));
    fc.assert(fc.property(word, tail, (w, t) => agrees(w + t)), { numRuns: RUNS.prefixed * SCALE });
  });

  it(`never throws on any string, beyond latin1 too (${RUNS.unicode * SCALE})`, () => {
    const word = fc.constantFrom('', ...COMMANDS.map((c) => c.match));
    // Code points of any plane, lone surrogates included (fc.string's 'binary' unit is much slower).
    const anyString = fc.array(fc.integer({ min: 0, max: 0x10ffff }), { maxLength: 80 })
      .map((cps) => cps.map((c) => (c >= 0xd800 && c < 0xe000 ? String.fromCharCode(c) : String.fromCodePoint(c))).join(''));
    fc.assert(fc.property(word, anyString, (w, s) => {
      const r = parseCommand(w + s);
      expect(r === ParseError.BadFormat || r === ParseError.UnknownCommand || typeof r === 'object').toBe(true);
    }), { numRuns: RUNS.unicode * SCALE });
  });

  it(`the framing model reads overlong lines as documented and as implemented alike, except where it flags the known bug (${RUNS.framing * SCALE} streams)`, () => {
    fc.assert(fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
      const stream = Buffer.from(ops.join(''), 'latin1');
      const documented = frame(stream, { overlong: 'documented' });
      const implemented = frame(stream, { overlong: 'as-implemented' });
      expect(implemented.knownBug).toBe(documented.knownBug);
      if (!documented.knownBug) expect(implemented).toEqual(documented);
    }), { numRuns: RUNS.framing * SCALE });
  });
});
