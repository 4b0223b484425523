/**
 * Self-test of the differential engine: it must report nothing when a target is
 * compared with itself, and it must report every kind of difference we plant
 * (through a rewriting proxy or a fake server), while tolerating exactly what the
 * normalisation rules allow.
 */
import { testShards } from '../helpers/topology.js';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { hasBeanstalkd } from '../helpers/beanstalkd.js';
import { DELIBERATE_DIVERGENCES } from './deliberate.js';
import { DslError, parseScenarios, parseTemplate, type Scenario } from './dsl.js';
import { runScenario, type ScenarioResult, type Target, type TargetInstance } from './engine.js';
import { compareNorm, IdMap, NORMALISATION_RULES, normaliseReply, type RawReply } from './normalise.js';
import { beanstalkdTarget, proxyTarget, replyBytes } from './targets.js';

const one = (text: string): Scenario => {
  const s = parseScenarios(text, 'inline');
  expect(s).toHaveLength(1);
  return s[0]!;
};

const raw = (line: string, data?: string): RawReply =>
  data === undefined ? { line } : { line, chunk: Buffer.from(`${data}\r\n`, 'latin1') };

/** Rewrites the YAML of an OK reply and fixes its byte count. */
function rewriteYaml(r: RawReply, f: (yaml: string) => string): Buffer {
  if (!r.chunk || !r.line.startsWith('OK ')) return replyBytes(r);
  const yaml = f(r.chunk.subarray(0, r.chunk.length - 2).toString('latin1'));
  return Buffer.from(`OK ${Buffer.byteLength(yaml, 'latin1')}\r\n${yaml}\r\n`, 'latin1');
}

describe('scenario language', () => {
  it('decodes escapes and placeholders', () => {
    const src = { file: 'x', line: 1, text: '' };
    expect(parseTemplate('a\\r\\n\\0\\s\\t\\\\\\x41\\{b}', src)).toEqual(['a\r\n\0 \t\\A{b}']);
    expect(parseTemplate('peek {id:2} {rep:ab:3}', src)).toEqual(['peek ', { id: 2 }, ' ababab']);
    expect(() => parseTemplate('{nope}', src)).toThrow(DslError);
    expect(() => parseTemplate('\\q', src)).toThrow(DslError);
  });

  it('parses every step form', () => {
    const s = one([
      '=== all forms',
      'a: put 0 0 1 1\\r\\nx',
      'a:2 foo\\r\\nbar',
      'b> reserve',
      'b>> raw',
      'b< 2 5000',
      'b silent 10',
      'b halfclose',
      'b expect-closed',
      'a close',
      'sleep 5',
      'c: USE x',
      '~ case-insensitive-commands: USING x',
    ].join('\n'));
    expect(s.steps.map((x) => x.kind)).toEqual(['send', 'recv', 'send', 'recv', 'send', 'send', 'recv', 'silent', 'halfclose', 'expect-closed', 'close', 'sleep', 'send', 'recv']);
    const last = s.steps[s.steps.length - 1]!;
    expect(last.kind === 'recv' && last.declared).toEqual({ divergence: 'case-insensitive-commands', replies: ['USING x\r\n'] });
    const r = s.steps[3]!;
    expect(r.kind === 'recv' && [r.count, r.timeoutMs]).toEqual([2, 2000]);
  });

  it('rejects unknown divergences and dangling ~ lines', () => {
    expect(() => parseScenarios('=== x\na: stats\n~ no-such-thing: OK', 'f')).toThrow(/unknown deliberate/);
    expect(() => parseScenarios('=== x\nsleep 1\n~ yaml-quoting: OK', 'f')).toThrow(/must follow a reading step/);
    expect(() => parseScenarios('a: stats', 'f')).toThrow(/before the first/);
  });

  it('keeps exactly four deliberate divergences', () => {
    expect(DELIBERATE_DIVERGENCES).toHaveLength(4);
  });
});

describe('normaliser', () => {
  it('maps job ids by order of appearance, whatever the numbers', () => {
    const ids = new IdMap();
    expect(normaliseReply(raw('INSERTED 7'), '1.12', ids).head).toBe('INSERTED {id:1}');
    expect(normaliseReply(raw('BURIED 9'), '1.12', ids).head).toBe('BURIED {id:2}');
    expect(normaliseReply(raw('RESERVED 9 1', 'x'), '1.12', ids).head).toBe('RESERVED {id:2} 1');
    expect(normaliseReply(raw('FOUND 8 1', 'x'), '1.12', ids).head).toBe('FOUND {id:?8} 1');
    expect(normaliseReply(raw('BURIED'), '1.12', ids).head).toBe('BURIED');
    expect(ids.resolve(2)).toBe('9');
  });

  const job = (id: number, age: number, tube = 'default') =>
    `---\nid: ${id}\ntube: ${tube}\nstate: ready\npri: 0\nage: ${age}\ndelay: 0\nttr: 1\ntime-left: 0\nfile: 0\nreserves: 0\ntimeouts: 0\nreleases: 0\nburies: 0\nkicks: 0\n`;
  const ok = (yaml: string) => raw(`OK ${yaml.length}`, yaml);

  it('tolerates +-1 s on timing fields only', () => {
    const a = new IdMap(); a.learn('1');
    const b = new IdMap(); b.learn('5');
    const base = normaliseReply(ok(job(1, 10)), '1.12', a);
    expect(compareNorm(base, normaliseReply(ok(job(5, 11)), '1.12', b))).toBeUndefined();
    expect(compareNorm(base, normaliseReply(ok(job(5, 12)), '1.12', b))).toMatch(/age/);
    expect(compareNorm(base, normaliseReply(ok(job(5, 10).replace('kicks: 0', 'kicks: 1')), '1.12', b))).toMatch(/kicks/);
  });

  it('strips and checks 1.13 quoting', () => {
    const a = normaliseReply(ok(job(1, 0)), '1.12', new IdMap());
    const b = normaliseReply(ok(job(1, 0, '"default"')), '1.13', new IdMap());
    expect(a.problems).toEqual([]);
    expect(b.problems).toEqual([]);
    expect(b.quotedFields).toEqual(['stats-job.tube']);
    expect(compareNorm(a, b)).toBeUndefined();
    expect(normaliseReply(ok(job(1, 0)), '1.13', new IdMap()).problems.join()).toMatch(/should be double-quoted/);
    expect(normaliseReply(ok(job(1, 0, '"default"')), '1.12', new IdMap()).problems.join()).toMatch(/should not be/);
  });

  it('checks the announced byte count and the YAML shape', () => {
    const good = '---\n- default\n';
    expect(normaliseReply({ line: 'OK 14', chunk: Buffer.from(`${good}\r\n`) }, '1.12', new IdMap()).problems).toEqual([]);
    // announced one byte too few: the chunk ends in "\n\r" instead of "\r\n"
    const short = normaliseReply({ line: 'OK 13', chunk: Buffer.from(`${good}\r`) }, '1.12', new IdMap());
    expect(short.problems.join()).toMatch(/not terminated/);
    expect(normaliseReply(ok('--\n- x\n'), '1.12', new IdMap()).problems.join()).toMatch(/must start/);
  });

  it('compares YAML lists in order (clients compare list-tubes as beanstalkd orders it)', () => {
    const x = normaliseReply(ok('---\n- default\n- foo\n'), '1.12', new IdMap());
    const same = normaliseReply(ok('---\n- default\n- foo\n'), '1.13', new IdMap());
    const swapped = normaliseReply(ok('---\n- foo\n- default\n'), '1.13', new IdMap());
    expect(compareNorm(x, same)).toBeUndefined();
    // With several shards, lists compare as sets (list-order-across-shards).
    if (testShards === 1) expect(compareNorm(x, swapped)).toBeDefined();
    else expect(compareNorm(x, swapped)).toBeUndefined();
  });

  it('masks only the unmatchable stats fields', () => {
    const stats = (pid: number, put: number) =>
      `---\ncmd-put: ${put}\npid: ${pid}\nversion: "1.12"\nuptime: 3\nid: abc${pid}\nhostname: h${pid}\n`.replace('---\n', '---\ncurrent-jobs-urgent: 0\n');
    const a = normaliseReply(ok(stats(1, 1)), '1.12', new IdMap());
    expect(compareNorm(a, normaliseReply(ok(stats(2, 1)), '1.12', new IdMap()))).toBeUndefined();
    expect(compareNorm(a, normaliseReply(ok(stats(2, 2)), '1.12', new IdMap()))).toMatch(/cmd-put/);
  });
});

/** A fake server: answers each CRLF line from a table, UNKNOWN_COMMAND otherwise. */
function fakeTarget(name: string, answers: Record<string, string>): Target {
  return {
    name,
    dialect: '1.12',
    async start(): Promise<TargetInstance> {
      const socks = new Set<net.Socket>();
      const server = net.createServer((s) => {
        socks.add(s);
        let buf = '';
        s.on('data', (d) => {
          buf += d.toString('latin1');
          let i: number;
          while ((i = buf.indexOf('\r\n')) >= 0) {
            const line = buf.slice(0, i);
            buf = buf.slice(i + 2);
            s.write(answers[line] ?? 'UNKNOWN_COMMAND\r\n');
          }
        });
        s.on('error', () => undefined);
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      return {
        port: (server.address() as net.AddressInfo).port,
        async stop() { for (const s of socks) s.destroy(); await new Promise<void>((r) => server.close(() => r())); },
      };
    },
  };
}

describe('engine against fake servers (no beanstalkd needed)', () => {
  const answers = { 'list-tube-used': 'USING default\r\n', 'put 0 0 1 1': 'INSERTED 41\r\n', 'peek 41': 'FOUND 41 1\r\nx\r\n' };
  const sc = one('=== fake\na: list-tube-used\na: put 0 0 1 1\na: peek {id:1}\na: nonsense');

  it('reports nothing for identical servers, even with different id numbers', async () => {
    const other = fakeTarget('fake-b', { ...answers, 'put 0 0 1 1': 'INSERTED 3\r\n', 'peek 3': 'FOUND 3 1\r\nx\r\n' });
    const r = await runScenario(sc, fakeTarget('fake-a', answers), other);
    expect(r.divergences).toEqual([]);
  });

  it('reports a server that answers one reply differently', async () => {
    const r = await runScenario(sc, fakeTarget('fake-a', answers), fakeTarget('fake-b', { ...answers, 'list-tube-used': 'USING Default\r\n' }));
    expect(r.divergences).toHaveLength(1);
    expect(r.divergences[0]).toMatchObject({ kind: 'reply', where: 'inline:2', step: 'a: list-tube-used' });
    expect(r.divergences[0]!.replies).toEqual({ 'fake-a': '"USING default\\r\\n"', 'fake-b': '"USING Default\\r\\n"' });
  });

  it('reports a different job body', async () => {
    const r = await runScenario(sc, fakeTarget('fake-a', answers), fakeTarget('fake-b', { ...answers, 'peek 41': 'FOUND 41 1\r\ny\r\n' }));
    expect(r.divergences.map((d) => d.message)).toEqual(['reply 1: job bodies differ from byte 0 (lengths 1 and 1)']);
  });

  it('reports extra bytes left unread at the end', async () => {
    const r = await runScenario(sc, fakeTarget('fake-a', answers), fakeTarget('fake-b', { ...answers, nonsense: 'UNKNOWN_COMMAND\r\nEXTRA\r\n' }));
    expect(r.divergences.map((d) => d.kind)).toEqual(['unread-bytes']);
  });

  it('reports a missing reply as a desync and stops', async () => {
    const r = await runScenario(one('=== fake\na: list-tube-used\na: nonsense\na: list-tube-used'), fakeTarget('fake-a', answers),
      fakeTarget('fake-b', { ...answers, nonsense: '' }));
    expect(r.divergences.map((d) => d.kind)).toEqual(['desync']);
  }, 10_000);
});

describe.skipIf(!hasBeanstalkd)(`engine against beanstalkd${hasBeanstalkd ? '' : ' — SKIPPED: beanstalkd is not installed'}`, () => {
  const ref = beanstalkdTarget('beanstalkd');
  const sample = parseScenarios([
    '=== sample',
    'a: put 0 0 100 5\\r\\nhello',
    'a: watch foo',
    'a:2 put 0 0 100 1\\r\\nxyz',
    'a: put 0 0 100 1\\r\\ny',
    'a: reserve',
    'a: reserve',
    'a: stats-job {id:2}',
    'a: stats-tube default',
    'a: list-tubes-watched',
    'a: stats',
    'b> reserve',
    'b silent 100',
    'a: release {id:2} 0 0',
    'b< 1',
    'a> quit',
    'a expect-closed',
  ].join('\n'), 'inline')[0]!;
  const run = (sub: Target, s: Scenario = sample): Promise<ScenarioResult> => runScenario(s, ref, sub);

  it('finds no divergence between two beanstalkd processes', async () => {
    const r = await run(beanstalkdTarget('beanstalkd#2'));
    expect(r.divergences).toEqual([]);
    // ids are learned per target: the EXPECTED_CRLF put consumed id 2
    expect(r.transcripts[0]!.outcomes.some((o) => o.kind === 'replies' && o.replies.some((x) => x.raw === 'INSERTED 3\r\n'))).toBe(true);
  });

  it('detects a proxy that changes one reply line', async () => {
    const r = await run(proxyTarget(ref, 'proxy', (x) => (x.line === 'WATCHING 2' ? 'WATCHING 3\r\n' : replyBytes(x))));
    expect(r.divergences).toHaveLength(1);
    expect(r.divergences[0]).toMatchObject({ kind: 'reply', step: 'a: watch foo' });
  });

  it('detects a changed stats counter but tolerates +1 s of age', async () => {
    const counter = await run(proxyTarget(ref, 'proxy', (x) => rewriteYaml(x, (y) => y.replace('cmd-watch: 1', 'cmd-watch: 2'))));
    expect(counter.divergences.map((d) => d.message)).toEqual(['reply 1: YAML line 16: "cmd-watch: 1" vs "cmd-watch: 2"']);
    const age1 = await run(proxyTarget(ref, 'proxy', (x) => rewriteYaml(x, (y) => y.replace(/\nage: (\d+)/, (_, n) => `\nage: ${Number(n) + 1}`))));
    expect(age1.divergences).toEqual([]);
    const age2 = await run(proxyTarget(ref, 'proxy', (x) => rewriteYaml(x, (y) => y.replace(/\nage: (\d+)/, (_, n) => `\nage: ${Number(n) + 2}`))));
    expect(age2.divergences.map((d) => d.step)).toEqual(['a: stats-job {id:2}']);
  });

  it('detects a wrong OK byte count', async () => {
    const r = await run(proxyTarget(ref, 'proxy', (x) => {
      if (!x.line.startsWith('OK ') || !x.chunk) return replyBytes(x);
      const n = x.chunk.length - 2;
      return Buffer.concat([Buffer.from(`OK ${n - 1}\r\n`), x.chunk]);
    }));
    expect(r.divergences.some((d) => d.kind === 'protocol' && /not terminated/.test(d.message))).toBe(true);
  });

  it('accepts 1.13 quoting from a 1.13 target and records the deliberate divergence', async () => {
    const quote113 = (x: RawReply) => rewriteYaml(x, (y) => y.replace(/^(tube|name|hostname|os|platform): (.*)$/gm, '$1: "$2"'));
    const r = await run(proxyTarget(ref, 'proxy-1.13', quote113, '1.13'));
    expect(r.divergences).toEqual([]);
    expect(r.deliberate.map((d) => d.divergence)).toEqual(['yaml-quoting']);
    // the same bytes from a target that claims 1.12 are wrong, and so is 1.12 output claiming 1.13
    const wrong = await run(proxyTarget(ref, 'proxy', quote113));
    expect(wrong.divergences.filter((d) => d.kind === 'protocol')).toHaveLength(5);
    const unquoted = await run(proxyTarget(ref, 'proxy', (x) => replyBytes(x), '1.13'));
    expect(unquoted.divergences.filter((d) => d.kind === 'protocol')).toHaveLength(5);
  });

  it('checks a declared deliberate divergence instead of comparing', async () => {
    const s = one('=== d\na: reserve-with-timeout abc\n~ reserve-timeout-parse: BAD_FORMAT\na: list-tube-used');
    const emulating = await run(proxyTarget(ref, 'proxy-1.13', (x) => (x.line === 'TIMED_OUT' ? 'BAD_FORMAT\r\n' : replyBytes(x)), '1.13'), s);
    expect(emulating.divergences).toEqual([]);
    expect(emulating.deliberate.map((d) => d.divergence)).toEqual(['reserve-timeout-parse']);
    const notEmulating = await run(proxyTarget(ref, 'proxy-1.13', (x) => replyBytes(x), '1.13'), s);
    expect(notEmulating.divergences.map((d) => d.kind)).toEqual(['declared']);
    // between two targets of the same dialect the step is compared as usual
    const same = await run(beanstalkdTarget('beanstalkd#2'), s);
    expect(same.divergences).toEqual([]);
    expect(same.deliberate).toEqual([]);
  });

  it('detects a target that keeps a connection open after quit', async () => {
    const s = one('=== q\na: list-tube-used\na> quit\na expect-closed');
    const r = await run(proxyTarget(ref, 'proxy', (x) => replyBytes(x)), s);
    expect(r.divergences).toEqual([]);
    const stubborn = fakeTarget('stubborn', { 'list-tube-used': 'USING default\r\n', quit: '' });
    const r2 = await runScenario(s, ref, stubborn);
    expect(r2.divergences.map((d) => d.kind)).toEqual(['desync']);
  }, 10_000);
});

describe('README', () => {
  it('documents every normalisation rule and every deliberate divergence', () => {
    const readme = readFileSync(new URL('./README.md', import.meta.url), 'utf8');
    for (const r of NORMALISATION_RULES) expect(readme).toContain(`| \`${r.name}\` | ${r.applies} | ${r.rule} |`);
    for (const d of DELIBERATE_DIVERGENCES) expect(readme).toContain(`| \`${d.id}\` | ${d.area} | ${d.beanstalkd112} | ${d.redstalk} | ${d.handling} |`);
  });
});
