// The protocol table and the parser, without any server.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { ParseError, parseCommand } from '../../src/protocol/parser.js';
import { COMMANDS, isValidName, PROTOCOL } from '../../src/protocol/spec.js';
import { unhandledCommands } from '../../src/server/commands.js';
import { yamlDict, yamlList } from '../../src/protocol/yaml.js';
import { REPLY, SPEC_WORDS } from '../../src/protocol/replies.js';
import { ROOT } from '../helpers/redstalk.js';

const BF = ParseError.BadFormat;
const UC = ParseError.UnknownCommand;

function parse(line: string) {
  const r = parseCommand(line);
  return typeof r === 'number' ? r : { name: r.spec.name, args: r.args, trailing: r.trailing };
}

describe('protocol/commands.json', () => {
  it('is valid against its JSON Schema', () => {
    const schema = JSON.parse(readFileSync(path.join(ROOT, 'protocol/schema/commands.schema.json'), 'utf8'));
    const doc = JSON.parse(readFileSync(path.join(ROOT, 'protocol/commands.json'), 'utf8'));
    const validate = new Ajv({ allErrors: true }).compile(schema);
    expect(validate(doc), JSON.stringify(validate.errors)).toBe(true);
  });

  it('a schema violation is caught', () => {
    const schema = JSON.parse(readFileSync(path.join(ROOT, 'protocol/schema/commands.schema.json'), 'utf8'));
    const validate = new Ajv().compile(schema);
    const broken = structuredClone(PROTOCOL) as unknown as { commands: Array<Record<string, unknown>> };
    broken.commands[0]!.args = [{ name: 'x', type: 'float' }];
    expect(validate(broken)).toBe(false);
  });

  it('the server has a reply buffer for every fixed word of the spec, and no other', () => {
    expect(Object.keys(REPLY).sort()).toEqual([...SPEC_WORDS].sort());
  });

  it('every command has a handler', () => {
    expect(unhandledCommands()).toEqual([]);
  });

  it('lists the whole beanstalkd 1.13 command set, in which_cmd order', () => {
    expect(COMMANDS.map((c) => c.name)).toEqual([
      'put', 'peek', 'peek-ready', 'peek-delayed', 'peek-buried', 'reserve-with-timeout', 'reserve-job', 'reserve',
      'delete', 'release', 'bury', 'kick', 'kick-job', 'touch', 'stats-job', 'stats-tube', 'stats', 'use', 'watch',
      'ignore', 'list-tubes-watched', 'list-tube-used', 'list-tubes', 'quit', 'pause-tube',
    ]);
    // No literal can shadow a later one unless beanstalkd's order intends it.
    for (const [i, a] of COMMANDS.entries()) {
      for (const b of COMMANDS.slice(i + 1)) expect(b.match.startsWith(a.match), `${a.match} shadows ${b.match}`).toBe(false);
    }
  });
});

describe('parseCommand', () => {
  it('parses every command with valid arguments', () => {
    expect(parse('put 1 2 3 4')).toEqual({ name: 'put', args: [1, 2, 3, 4], trailing: false });
    expect(parse('put 4294967295 4294967295 4294967295 4294967295')).toMatchObject({ args: [4294967295, 4294967295, 4294967295, 4294967295] });
    expect(parse('peek 18446744073709551615')).toMatchObject({ args: ['18446744073709551615'] });
    expect(parse('delete 007')).toMatchObject({ args: ['7'] });
    expect(parse('release 1 2 3')).toMatchObject({ name: 'release', args: ['1', 2, 3] });
    expect(parse('bury 1 2')).toMatchObject({ name: 'bury', args: ['1', 2] });
    expect(parse('reserve-with-timeout 2147483647')).toMatchObject({ args: [2147483647] });
    expect(parse('pause-tube  a-b 9')).toMatchObject({ name: 'pause-tube', args: ['a-b', 9] });
    expect(parse('stats-tube a_b(1);$.+/')).toMatchObject({ args: ['a_b(1);$.+/'] });
    expect(parse('quit now')).toMatchObject({ name: 'quit' });
  });

  it('rejects bad numbers and trailing garbage with BAD_FORMAT', () => {
    for (const l of ['put 1 2 3', 'put -1 2 3 4', 'put +1 2 3 4', 'put 4294967296 0 0 0', 'peek 18446744073709551616',
      'delete 1 ', 'delete 1x', 'delete ', 'release 1 2', 'bury 1', 'touch x', 'stats-job', 'reserve-with-timeout 2147483648',
      'reserve-with-timeout -1', 'reserve-with-timeout x', 'kick ', 'kick x', 'kick 18446744073709551616', 'pause-tube x', 'pause-tube :x 1',
      'pause-tube x 1 ', 'peek-ready ', 'stats ', 'reserve ', 'list-tubes-watched x', 'stats\0']) {
      expect([l, parse(l)]).toEqual([l, BF]);
    }
  });

  it('reads numbers like strtoumax: any number of leading zeros', () => {
    expect(parse('put 00000000001 0 000000000600 00000000000000000001')).toMatchObject({ args: [1, 0, 600, 1] });
    expect(parse('reserve-with-timeout 000000000000002147483647')).toMatchObject({ args: [2147483647] });
    expect(parse('put 0000000004294967296 0 1 1')).toBe(BF);
    expect(parse('peek 000000000000000000000000007')).toMatchObject({ args: ['7'] });
  });

  it('leaves the validity of a pause-tube name to the handler (beanstalkd counts the command first)', () => {
    expect(parse('pause-tube -x 1')).toMatchObject({ name: 'pause-tube', args: ['-x', 1] });
    expect(parse(`pause-tube ${'a'.repeat(201)} 1`)).toMatchObject({ args: ['a'.repeat(201), 1] });
  });

  it('accepts put with a trailing argument for put to judge itself (JOB_TOO_BIG comes first)', () => {
    expect(parse('put 1 2 3 4 junk')).toMatchObject({ name: 'put', trailing: true });
  });

  it('parses kick leniently like strtoul', () => {
    expect(parse('kick -1')).toMatchObject({ args: [4294967295] });
    expect(parse('kick 4294967296')).toMatchObject({ args: [0] });
    expect(parse('kick  +5 junk')).toMatchObject({ args: [5] });
    expect(parse('kick \t7')).toMatchObject({ args: [7] });
  });

  it('matches command words by prefix, case-insensitively', () => {
    expect(parse('PUT 0 0 1 1')).toMatchObject({ name: 'put' });
    expect(parse('Reserve')).toMatchObject({ name: 'reserve' });
    expect(parse('quitxyz')).toMatchObject({ name: 'quit' });
    expect(parse('pause-tubedefault 0')).toMatchObject({ name: 'pause-tube', args: ['default', 0] });
    expect(parse('reservex')).toBe(BF);
    expect(parse('')).toBe(UC);
    expect(parse('use')).toBe(UC);
    expect(parse('puts 1')).toBe(UC);
    expect(parse('delete\t1')).toBe(UC);
    expect(parse('ñ')).toBe(UC);
  });

  it('applies the tube-name rules', () => {
    expect(isValidName('a'.repeat(200))).toBe(true);
    expect(isValidName('a'.repeat(201))).toBe(false);
    expect(isValidName('-a')).toBe(false);
    expect(isValidName('a-')).toBe(true);
    expect(isValidName('')).toBe(false);
    for (const l of ['use a b', 'use  a', 'use a ', 'watch a:b', 'ignore *', 'use é']) expect([l, parse(l)]).toEqual([l, BF]);
  });
});

describe('yaml', () => {
  it('prints like beanstalkd 1.13', () => {
    expect(yamlDict([['name', 'x'], ['n', 1], ['draining', false]])).toBe('---\nname: "x"\nn: 1\ndraining: false\n');
    expect(yamlList(['a', 'b'])).toBe('---\n- a\n- b\n');
  });
});
