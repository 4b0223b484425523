// The client against the machine-readable protocol (protocol/commands.json and
// stats.json), derived from the JSON: a command, reply word or stats field added
// to the spec fails here until the client covers it.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Client } from '../src/client.js';
import { DECODERS } from '../src/commands.js';
import { ERROR_CLASSES, RedstalkError, UnexpectedReplyError } from '../src/errors.js';
import { ReplyReader, type Reply } from '../src/reader.js';
import { DOCUMENTS, type FieldType } from '../src/yaml.js';
import { fakeServer, ROOT } from './harness.js';

interface Arg { name: string; type: string }
interface Command { name: string; match: string; exact?: boolean; args: Arg[]; body?: unknown; yaml?: string; replies: string[] }
interface Spec { errors: string[]; replyBodies: Record<string, { content: string }>; commands: Command[] }
interface Field { name: string; type: FieldType; quoted?: boolean; extension?: boolean; whenSet?: boolean }
interface Stats { documents: Record<string, { command: string; fields: Field[] }> }

const spec = JSON.parse(readFileSync(path.join(ROOT, 'protocol/commands.json'), 'utf8')) as Spec;
const stats = JSON.parse(readFileSync(path.join(ROOT, 'protocol/stats.json'), 'utf8')) as Stats;

const camel = (name: string) => name.replace(/-(.)/g, (_m, c: string) => c.toUpperCase());

/** A YAML document of stats.json with a sample value of each field's type. */
function sampleYaml(doc: string): string {
  if (doc === 'list') return '---\n- default\n- other\n';
  const fields = stats.documents[doc]?.fields;
  if (!fields) throw new Error(`commands.json names a yaml document stats.json does not have: ${doc}`);
  const value = (f: Field) => ({ integer: '42', id: '7', string: 'text', boolean: 'true', decimal: '0.250' })[f.type];
  return `---\n${fields.map((f) => `${f.name}: ${f.quoted ? `"${value(f)}"` : value(f)}\n`).join('')}`;
}

/** The bytes of a reply template such as `FOUND <id> <bytes>`, with sample values. */
function sampleReply(template: string, command: Command): Buffer {
  const framing = spec.replyBodies[template];
  const placeholders = (s: string, bytes: number) => s.replace(/<([^>]+)>/g, (_m, what: string) =>
    ({ bytes: String(bytes), tube: 'default', n: '2' })[what] ?? '7');
  if (!framing) return Buffer.from(`${placeholders(template, 0)}\r\n`);
  switch (framing.content) {
    case 'job': return Buffer.from(`${placeholders(template, 5)}\r\nhello\r\n`);
    case 'yaml': {
      const yaml = sampleYaml(command.yaml ?? '');
      return Buffer.from(`${placeholders(template, Buffer.byteLength(yaml))}\r\n${yaml}\r\n`);
    }
    case 'reserved-jobs': return Buffer.from(`${placeholders(template, 0)}\r\nRESERVED 1 1\r\na\r\nRESERVED 2 1\r\nb\r\n`);
    default: throw new Error(`a reply body this test does not know: ${framing.content}`);
  }
}

function frame(bytes: Buffer): Reply {
  const replies: Reply[] = [];
  new ReplyReader((r) => replies.push(r)).push(bytes);
  expect(replies).toHaveLength(1);
  return replies[0]!;
}

const withReplies = spec.commands.filter((c) => c.replies.length > 0);

describe('protocol/commands.json', () => {
  it('has a Client method for every command', () => {
    const missing = spec.commands.map((c) => camel(c.name)).filter((m) => typeof (Client.prototype as unknown as Record<string, unknown>)[m] !== 'function');
    expect(missing).toEqual([]);
  });

  it('has a decoder for every command with replies, and none for a command it does not list', () => {
    expect(Object.keys(DECODERS).sort()).toEqual(withReplies.map((c) => c.name).sort());
  });

  for (const command of withReplies) {
    it(`${command.name}: maps every reply word, and every error word to its error class`, () => {
      const decode = DECODERS[command.name as keyof typeof DECODERS];
      let successes = 0;
      for (const template of [...command.replies, ...spec.errors]) {
        const reply = frame(sampleReply(template, command));
        let result: unknown;
        try {
          result = decode(reply);
        } catch (err) {
          expect(err, `${command.name} ← ${reply.line}`).toBeInstanceOf(RedstalkError);
          expect(err, `${command.name} ← ${reply.line}`).not.toBeInstanceOf(UnexpectedReplyError);
          expect((err as RedstalkError).code).toBe(reply.word);
          expect(err).toBeInstanceOf(ERROR_CLASSES[reply.word as keyof typeof ERROR_CLASSES]);
          continue;
        }
        successes++;
        if (command.yaml && command.yaml !== 'list') checkTypes(result as Record<string, unknown>, command.yaml);
      }
      expect(successes, `${command.name} has no success reply`).toBeGreaterThan(0);
      // And a word it does not know is no success either.
      expect(() => decode(frame(Buffer.from('SURPRISE 1\r\n')))).toThrow(UnexpectedReplyError);
    });
  }

  it('sends every command word as commands.json matches it, with its arguments', async () => {
    const seen: string[] = [];
    let current: Command | undefined;
    // Answers each line with the first reply of the command under test.
    const server = await fakeServer((line) => {
      seen.push(line);
      return current?.replies.length ? sampleReply(current.replies[0]!, current) : undefined;
    });
    const c = await Client.connect({ port: server.port });
    try {
      const calls: Record<string, () => Promise<unknown>> = {
        put: () => c.put('hello', { priority: 1, delay: 2, ttr: 3 }),
        putWith: () => c.putWith('hello', { key: 'k1', expire: 5, onExpiry: 'bury', priority: 1, delay: 2, ttr: 3 }),
        tubeSet: () => c.tubeSet('t', 'max-reserved', 5),
        peek: () => c.peek(1), peekReady: () => c.peekReady(), peekDelayed: () => c.peekDelayed(), peekBuried: () => c.peekBuried(),
        reserveWithTimeout: () => c.reserveWithTimeout(1), reserveJob: () => c.reserveJob(1), reserve: () => c.reserve(),
        delete: () => c.delete(1), release: () => c.release(1, { priority: 2, delay: 3 }), bury: () => c.bury(1, 2),
        kick: () => c.kick(1), kickJob: () => c.kickJob(1), touch: () => c.touch(1), statsJob: () => c.statsJob(1),
        statsTube: () => c.statsTube('t'), stats: () => c.stats(), use: () => c.use('t'), watch: () => c.watch('t'),
        ignore: () => c.ignore('t'), listTubesWatched: () => c.listTubesWatched(), listTubeUsed: () => c.listTubeUsed(),
        listTubes: () => c.listTubes(), pauseTube: () => c.pauseTube('t', 1), reserveMany: () => c.reserveMany(2, 1),
        enter: () => c.enter('r', 'u'), check: () => c.check('r', 'u'), leave: () => c.leave('r', 'u'),
        roomConfig: () => c.roomConfig('r', { capacity: 1, checkinTimeout: 2, participantTimeout: 3, grace: 4 }),
        roomRate: () => c.roomRate('r', 1), pauseRoom: () => c.pauseRoom('r', true), roomLottery: () => c.roomLottery('r', 1),
        statsRoom: () => c.statsRoom('r'), listRooms: () => c.listRooms(), auth: () => c.auth('t0ken'), quit: () => c.quit(),
      };
      // quit last: it ends the connection.
      const commands = [...spec.commands.filter((x) => x.name !== 'quit'), ...spec.commands.filter((x) => x.name === 'quit')];
      for (const command of commands) {
        const call = calls[camel(command.name)];
        expect(call, `no sample call for ${command.name}`).toBeDefined();
        seen.length = 0;
        current = command;
        await call!();
        expect(seen, command.name).toHaveLength(1);
        const line = seen[0]!;
        if (command.exact) expect(line).toBe(command.match);
        else {
          expect(line.startsWith(command.match), `${command.name} sent ${line}`).toBe(true);
          expect(line.split(' '), `${command.name} sent ${line}`).toHaveLength(1 + command.args.length);
        }
      }
    } finally {
      await c.close();
      await server.close();
    }
  });
});

function checkTypes(doc: Record<string, unknown>, name: string): void {
  for (const f of stats.documents[name]!.fields) {
    const want = { integer: 'number', id: 'number', decimal: 'number', string: 'string', boolean: 'boolean' }[f.type];
    expect(typeof doc[f.name], `${name}.${f.name}`).toBe(want);
  }
}

describe('protocol/stats.json', () => {
  it('the client knows every field of every document, in order, with its type (extensions optional)', () => {
    const client = Object.fromEntries(Object.entries(DOCUMENTS).map(([doc, fields]) => [doc, Object.entries(fields)]));
    // An extension field (not printed, for now) or one printed only when set is optional: its type ends in `?`.
    const specified = Object.fromEntries(Object.entries(stats.documents).map(([doc, d]) => [doc, d.fields.map((f) => [f.name, `${f.type}${f.extension || f.whenSet ? '?' : ''}`])]));
    expect(client).toEqual(specified);
  });
});
