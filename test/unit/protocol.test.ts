// The protocol table and the parser, without any server.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { ParseError, parseCommand } from '../../src/protocol/parser.js';
import { COMMANDS, isValidName, MATCH_ORDER, PROTOCOL } from '../../src/protocol/spec.js';
import { unhandledCommands } from '../../src/commands/dispatch.js';
import { renderDocument } from '../../src/protocol/stats.js';
import { yamlList } from '../../src/protocol/yaml.js';
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
    expect(unhandledCommands(COMMANDS.map((c) => c.name))).toEqual([]);
    expect(unhandledCommands(['no-such-command'])).toEqual(['no-such-command']);
  });

  it('lists the whole beanstalkd 1.13 command set, in which_cmd order, then the extensions', () => {
    expect(COMMANDS.filter((c) => !c.extension).map((c) => c.name)).toEqual([
      'put', 'peek', 'peek-ready', 'peek-delayed', 'peek-buried', 'reserve-with-timeout', 'reserve-job', 'reserve',
      'delete', 'release', 'bury', 'kick', 'kick-job', 'touch', 'stats-job', 'stats-tube', 'stats', 'use', 'watch',
      'ignore', 'list-tubes-watched', 'list-tube-used', 'list-tubes', 'quit', 'pause-tube',
    ]);
    expect(COMMANDS.slice(25).every((c) => c.extension)).toBe(true);
    expect(COMMANDS.slice(25).map((c) => c.name)).toEqual([
      'auth', 'reserve-many', 'put-with', 'tube-set', 'enter', 'check', 'leave', 'room-config', 'room-rate', 'pause-room', 'room-lottery', 'stats-room', 'list-rooms',
    ]);
    // No literal can shadow a later one in matching order (extensions first: `stats` would shadow `stats-room `).
    for (const [i, a] of MATCH_ORDER.entries()) {
      for (const b of MATCH_ORDER.slice(i + 1)) expect(b.match.startsWith(a.match), `${a.match} shadows ${b.match}`).toBe(false);
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

  it('parses room commands: names by tube-name rules, one space apart, numbers within their bounds', () => {
    expect(parse('enter lobby alice')).toEqual({ name: 'enter', args: ['lobby', 'alice'], trailing: false });
    expect(parse(`check ${'r'.repeat(200)} a_b(1);$.+/`)).toMatchObject({ name: 'check', args: ['r'.repeat(200), 'a_b(1);$.+/'] });
    expect(parse('LEAVE lobby a-')).toMatchObject({ name: 'leave', args: ['lobby', 'a-'] });
    expect(parse('room-config lobby 1 1 1 0')).toMatchObject({ args: ['lobby', 1, 1, 1, 0] });
    expect(parse('room-config lobby  4294967295 4294967295 4294967295 4294967295')).toMatchObject({ args: ['lobby', 4294967295, 4294967295, 4294967295, 4294967295] });
    expect(parse('room-rate lobby 0')).toMatchObject({ name: 'room-rate', args: ['lobby', 0] });
    expect(parse('pause-room lobby 1')).toMatchObject({ name: 'pause-room', args: ['lobby', 1] });
    expect(parse('room-lottery lobby 3600')).toMatchObject({ name: 'room-lottery', args: ['lobby', 3600] });
    expect(parse('stats-room lobby')).toMatchObject({ name: 'stats-room', args: ['lobby'] });
    expect(parse('list-rooms')).toMatchObject({ name: 'list-rooms', args: [] });
    for (const l of ['enter lobby', 'enter lobby ', 'enter  lobby alice', 'enter lobby  alice', 'enter lobby alice ', 'enter lobby alice bob',
      'enter -lobby alice', 'enter lobby -alice', 'enter lob:by alice', 'enter lobby ali:ce', `enter lobby ${'a'.repeat(201)}`, 'enter lobby	alice',
      'check lobby', 'leave lobby', 'room-config lobby 0 1 1 0', 'room-config lobby 1 0 1 0', 'room-config lobby 1 1 0 0', 'room-config lobby 1 1 1',
      'room-config lobby 1 1 1 -1', 'room-config lobby 4294967296 1 1 0', 'room-rate lobby', 'room-rate lobby -1', 'pause-room lobby 2',
      'pause-room lobby', 'room-lottery lobby x', 'stats-room', 'stats-room ', 'stats-room a b', 'list-rooms x', 'list-rooms ']) {
      expect([l, parse(l)]).toEqual([l, BF]);
    }
    // Matched by prefix like every command: `enter` without a space is no command.
    expect(parse('enter')).toBe(UC);
    expect(parse('stats-roomx')).toBe(BF); // still beanstalkd's malformed `stats`
  });

  it('parses put-with and tube-set: a key of printable bytes, choices by their words, one space apart', () => {
    expect(parse('put-with order:7 30 bury 1 2 3 4')).toEqual({ name: 'put-with', args: ['order:7', 30, 'bury', 1, 2, 3, 4], trailing: false });
    expect(parse(`put-with ${'~'.repeat(128)} 0 delete 0 0 0 0`)).toMatchObject({ args: ['~'.repeat(128), 0, 'delete', 0, 0, 0, 0] });
    expect(parse('PUT-WITH - 0 delete  0 0 1 1')).toMatchObject({ name: 'put-with', args: ['-', 0, 'delete', 0, 0, 1, 1] });
    expect(parse('put-with k 0 delete 1 2 3 4 junk')).toMatchObject({ name: 'put-with', trailing: true });
    expect(parse('tube-set mail max-reserved 5')).toEqual({ name: 'tube-set', args: ['mail', 'max-reserved', 5], trailing: false });
    expect(parse('tube-set mail dedup-window 4294967295')).toMatchObject({ args: ['mail', 'dedup-window', 4294967295] });
    expect(parse('put-with')).toBe(UC);
    for (const l of ['put-with ', 'put-with k', 'put-with  k 0 delete 0 0 0 0', `put-with ${'k'.repeat(129)} 0 delete 0 0 0 0`,
      'put-with k\x01 0 delete 0 0 0 0', 'put-with k 0 delete 0 0 0', 'put-with k 0 DELETE 0 0 0 0', 'put-with k 0  delete 0 0 0 0',
      'put-with k 0 deletex 0 0 0 0', 'put-with k -1 delete 0 0 0 0', 'put-with k 0 bury', 'tube-set mail', 'tube-set mail max-reserved',
      'tube-set mail max-reserved x', 'tube-set mail max-reserved 1 ', 'tube-set mail rate 1', 'tube-set -mail max-reserved 1',
      'tube-set mail  max-reserved 1', 'tube-set mail max-reserved -1', 'tube-set mail max-reserved 4294967296']) {
      expect([l, parse(l)]).toEqual([l, BF]);
    }
  });
});

describe('yaml', () => {
  it('prints like beanstalkd 1.13', () => {
    const job = { id: '1', tube: 'x', state: 'ready', pri: 0, age: 1, delay: 0, ttr: 60, 'time-left': 0, file: 0,
      reserves: 0, timeouts: 0, releases: 0, buries: 0, kicks: 0 };
    expect(renderDocument('stats-job', job)).toBe('---\nid: 1\ntube: "x"\nstate: ready\npri: 0\nage: 1\ndelay: 0\nttr: 60\n'
      + 'time-left: 0\nfile: 0\nreserves: 0\ntimeouts: 0\nreleases: 0\nburies: 0\nkicks: 0\n');
    expect(yamlList(['a', 'b'])).toBe('---\n- a\n- b\n');
  });
});
