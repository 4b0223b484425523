import { testShards } from '../helpers/topology.js';

/**
 * Reply normalisation. Every rule is named; README.md has the same table
 * (NORMALISATION_RULES). Keep rules as narrow as possible: anything not listed
 * here is compared byte for byte.
 */

export type Dialect = '1.12' | '1.13';

export interface NormalisationRule { name: string; applies: string; rule: string; }

export const NORMALISATION_RULES: readonly NormalisationRule[] = [
  {
    name: 'job-id-placeholders',
    applies: '`INSERTED <id>`, `BURIED <id>` (put), `RESERVED <id> <n>`, `FOUND <id> <n>`, `id:` of stats-job',
    rule: 'ids are replaced by `{id:N}`, N = rank of the id among the ids this target reported in INSERTED/BURIED replies (in order of appearance). Unknown ids show as `{id:?<n>}` and so still compare literally.',
  },
  {
    name: 'timing-tolerance',
    applies: '`age`, `time-left` (stats-job), `uptime` (stats), `pause-time-left` (stats-tube)',
    rule: 'both values must be integers and differ by at most 1 (second).',
  },
  {
    name: 'mask-unmatchable',
    applies: 'stats: `pid`, `version`, `rusage-utime`, `rusage-stime`, `id` (instance id), `hostname`, `os`, `platform`, `binlog-oldest-index`, `binlog-current-index`, `binlog-records-migrated`, `binlog-records-written`, `binlog-max-size`',
    rule: 'value replaced by `*` (the key, its position and the line format still have to match). `max-job-size` is NOT masked (no scenario changes -z).',
  },
  {
    name: 'yaml-quoting (deliberate divergence)',
    applies: 'stats `hostname`/`os`/`platform`, stats-tube `name`, stats-job `tube`; stats `version`',
    rule: 'values are compared with the surrounding double quotes stripped; each target must quote exactly as its dialect does (1.13: all of them; 1.12: only `version`), otherwise a divergence is reported.',
  },
  {
    name: 'list-order-across-shards (sharded runs only)',
    applies: 'YAML lists (`list-tubes`, `list-tubes-watched`) in `npm run test:shards` / `test:cluster`',
    rule: 'items compared as a sorted set: with several shards, list-tubes lists each shard\'s tubes in turn (PROTOCOL.md "Shards"). Job ids there are shown by put order before this normaliser sees them (test/helpers/topology.ts).',
  },
  {
    name: 'ok-bytes-recomputed',
    applies: '`OK <bytes>` replies',
    rule: 'each target\'s own `<bytes>` must equal the length of its own YAML and the chunk must end in `\\r\\n`, and the YAML must be `---\\n` + `key: value\\n` / `- item\\n` lines; the comparison is then on the normalised YAML, and the displayed `<bytes>` is recomputed from it.',
  },
];

const TIMING_KEYS: Record<string, ReadonlySet<string>> = {
  'stats': new Set(['uptime']),
  'stats-tube': new Set(['pause-time-left']),
  'stats-job': new Set(['age', 'time-left']),
};

const MASKED_STATS_KEYS = new Set([
  'pid', 'version', 'rusage-utime', 'rusage-stime', 'id', 'hostname', 'os', 'platform',
  'binlog-oldest-index', 'binlog-current-index', 'binlog-records-migrated', 'binlog-records-written', 'binlog-max-size',
]);

/** Keys whose value is a quoted string in 1.13 (and, for `version`, in 1.12 too). */
const QUOTED_113: Record<string, ReadonlySet<string>> = {
  'stats': new Set(['version', 'hostname', 'os', 'platform']),
  'stats-tube': new Set(['name']),
  'stats-job': new Set(['tube']),
};
const QUOTED_112: Record<string, ReadonlySet<string>> = { 'stats': new Set(['version']) };

export type YamlKind = 'stats' | 'stats-tube' | 'stats-job' | 'list' | 'unknown';

/** Maps job ids of one target to placeholders. */
export class IdMap {
  private readonly ids: string[] = [];
  /** Records an id from INSERTED/BURIED (first sighting gets the next rank). */
  learn(id: string): string {
    if (!this.ids.includes(id)) this.ids.push(id);
    return this.placeholder(id);
  }
  placeholder(id: string): string {
    const k = this.ids.indexOf(id);
    return k < 0 ? `{id:?${id}}` : `{id:${k + 1}}`;
  }
  /** The real id for placeholder N, or undefined when this target never reported N ids. */
  resolve(n: number): string | undefined { return this.ids[n - 1]; }
}

export interface RawReply {
  line: string;
  /** The data chunk including its 2-byte terminator, for RESERVED/FOUND/OK. */
  chunk?: Buffer;
}

export interface NormReply {
  /** Reply line after id mapping; `OK` replies keep only "OK" (count checked separately). */
  head: string;
  /** Job body (RESERVED/FOUND), latin1. */
  body?: string;
  /** Normalised YAML lines (OK replies), without the leading `---`. */
  yaml?: string[];
  yamlKind?: YamlKind;
  /** Exactly what arrived, latin1. */
  raw: string;
  /** Normalised reply bytes, for display and for declared expectations. */
  text: string;
  /** Problems local to this target (bad byte count, malformed YAML, wrong quoting). */
  problems: string[];
  /** Quoted values seen where only 1.13 quotes (evidence for the yaml-quoting divergence). */
  quotedFields: string[];
}

function rawOf(r: RawReply): string {
  return `${r.line}\r\n${r.chunk ? r.chunk.toString('latin1') : ''}`;
}

function unquote(v: string): { value: string; quoted: boolean } {
  if (v.length >= 2 && v.startsWith('"') && v.endsWith('"')) return { value: v.slice(1, -1), quoted: true };
  return { value: v, quoted: false };
}

function yamlKindOf(keys: string[]): YamlKind {
  if (keys[0] === 'current-jobs-urgent' && keys.includes('cmd-put')) return 'stats';
  if (keys[0] === 'name') return 'stats-tube';
  if (keys[0] === 'id' && keys[1] === 'tube') return 'stats-job';
  return 'unknown';
}

function normaliseYaml(data: string, dialect: Dialect, ids: IdMap, n: NormReply): void {
  if (!data.startsWith('---\n') || !data.endsWith('\n')) {
    n.problems.push('YAML must start with "---\\n" and end with "\\n"');
    n.yaml = data.split('\n');
    n.yamlKind = 'unknown';
    return;
  }
  const lines = data.slice(4, -1).split('\n');
  if (lines.length === 1 && lines[0] === '') lines.length = 0;
  if (lines.length > 0 && lines.every((l) => l.startsWith('- '))) {
    n.yamlKind = 'list';
    // In order: clients compare list-tubes as beanstalkd orders it; with several
    // shards redstalk lists shard by shard (list-order-across-shards), compared as a set.
    n.yaml = testShards > 1 ? [...lines].sort() : lines;
    return;
  }
  const entries: Array<[string, string]> = [];
  for (const l of lines) {
    const m = /^([a-z][a-z-]*): (.*)$/.exec(l);
    if (!m) { n.problems.push(`malformed YAML line ${JSON.stringify(l)}`); entries.push([l, '']); continue; }
    entries.push([m[1]!, m[2]!]);
  }
  const kind = yamlKindOf(entries.map((e) => e[0]));
  n.yamlKind = kind;
  const quoted113 = QUOTED_113[kind] ?? new Set<string>();
  const quotedHere = (dialect === '1.13' ? QUOTED_113 : QUOTED_112)[kind] ?? new Set<string>();
  const out: string[] = [];
  for (const [k, v0] of entries) {
    let v = v0;
    if (quoted113.has(k)) {
      const u = unquote(v);
      const want = quotedHere.has(k);
      if (u.quoted !== want) n.problems.push(`${kind} \`${k}\` should ${want ? '' : 'not '}be double-quoted in ${dialect} (got ${v})`);
      if (u.quoted && k !== 'version') n.quotedFields.push(`${kind}.${k}`);
      v = u.value;
    }
    if (kind === 'stats' && MASKED_STATS_KEYS.has(k)) v = '*';
    else if (kind === 'stats-job' && k === 'id') v = ids.placeholder(v);
    else if (TIMING_KEYS[kind]?.has(k) && !/^\d+$/.test(v)) n.problems.push(`${kind} \`${k}\` is not an integer: ${v}`);
    out.push(`${k}: ${v}`);
  }
  n.yaml = out;
}

/** Normalises one reply of a target; learns ids from put replies. */
export function normaliseReply(r: RawReply, dialect: Dialect, ids: IdMap): NormReply {
  const n: NormReply = { head: r.line, raw: rawOf(r), text: '', problems: [], quotedFields: [] };
  let m: RegExpExecArray | null;
  if ((m = /^(INSERTED|BURIED) (\d+)$/.exec(r.line))) {
    n.head = `${m[1]} ${ids.learn(m[2]!)}`;
  } else if ((m = /^(RESERVED|FOUND) (\d+) (\d+)$/.exec(r.line))) {
    n.head = `${m[1]} ${ids.placeholder(m[2]!)} ${m[3]}`;
  }
  if (r.chunk) {
    const term = r.chunk.subarray(r.chunk.length - 2).toString('latin1');
    const data = r.chunk.subarray(0, r.chunk.length - 2).toString('latin1');
    if (term !== '\r\n') n.problems.push(`data chunk not terminated by \\r\\n (announced byte count wrong?): ends in ${JSON.stringify(term)}`);
    if (r.line.startsWith('OK ')) {
      n.head = 'OK';
      normaliseYaml(data, dialect, ids, n);
    } else {
      n.body = data;
    }
  }
  if (n.yaml) {
    const doc = `---\n${n.yaml.map((l) => l + '\n').join('')}`;
    n.text = `OK ${doc.length}\r\n${doc}\r\n`;
  } else {
    n.text = `${n.head}\r\n${n.body !== undefined ? n.body + '\r\n' : ''}`;
  }
  return n;
}

/** undefined when equal under the rules, else a one-line explanation. */
export function compareNorm(a: NormReply, b: NormReply): string | undefined {
  if (a.head !== b.head) return 'reply lines differ';
  if (a.body !== b.body) {
    const x = a.body ?? '';
    const y = b.body ?? '';
    let k = 0;
    while (k < x.length && k < y.length && x[k] === y[k]) k++;
    return `job bodies differ from byte ${k} (lengths ${x.length} and ${y.length})`;
  }
  if (!a.yaml || !b.yaml) return a.yaml || b.yaml ? 'only one reply has YAML' : undefined;
  if (a.yamlKind !== b.yamlKind) return `YAML kinds differ (${a.yamlKind} vs ${b.yamlKind})`;
  const kind = a.yamlKind ?? 'unknown';
  const n = Math.max(a.yaml.length, b.yaml.length);
  for (let i = 0; i < n; i++) {
    const la = a.yaml[i];
    const lb = b.yaml[i];
    if (la === lb) continue;
    if (la === undefined || lb === undefined) return `YAML line ${i + 1}: ${JSON.stringify(la ?? null)} vs ${JSON.stringify(lb ?? null)}`;
    const ma = /^([a-z-]+): (\d+)$/.exec(la);
    const mb = /^([a-z-]+): (\d+)$/.exec(lb);
    if (ma && mb && ma[1] === mb[1] && TIMING_KEYS[kind]?.has(ma[1]!) && Math.abs(Number(ma[2]) - Number(mb[2])) <= 1) continue;
    return `YAML line ${i + 1}: ${JSON.stringify(la)} vs ${JSON.stringify(lb)}`;
  }
  return undefined;
}

/** Printable form of bytes: printable ASCII as is, others escaped. */
export function esc(s: string | Buffer): string {
  const str = typeof s === 'string' ? s : s.toString('latin1');
  let out = '';
  for (const ch of str) {
    const c = ch.charCodeAt(0);
    if (ch === '\r') out += '\\r';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\\') out += '\\\\';
    else if (c === 0) out += '\\0';
    else if (c < 0x20 || c > 0x7e) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return out;
}
