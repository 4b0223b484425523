/**
 * A strict parser of the Prometheus text exposition format (0.0.4): every line
 * is a HELP, a TYPE or a sample; names and labels by the format's grammar; a
 * family declared once, its TYPE before its samples, its samples together;
 * histogram buckets cumulative, ending in +Inf equal to _count. Anything else throws.
 */
export interface Sample { name: string; labels: Record<string, string>; value: number }
export interface Family { name: string; type: string; help: string; samples: Sample[] }

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const LABEL = '[a-zA-Z_][a-zA-Z0-9_]*';
const VALUE = '[-+]?(?:[0-9]*\\.?[0-9]+(?:[eE][-+]?[0-9]+)?|Inf|NaN)';
const SAMPLE = new RegExp(`^(${NAME})(?:\\{((?:${LABEL}="(?:[^"\\\\\\n]|\\\\[\\\\"n])*",?)*)\\})? (${VALUE})(?: -?[0-9]+)?$`);
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

function parseLabels(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!text) return out;
  for (const m of text.matchAll(new RegExp(`(${LABEL})="((?:[^"\\\\\\n]|\\\\[\\\\"n])*)"`, 'g'))) {
    if (m[1]! in out) throw new Error(`label ${m[1]} twice in {${text}}`);
    out[m[1]!] = m[2]!.replace(/\\(.)/g, (_s, c: string) => (c === 'n' ? '\n' : c));
  }
  return out;
}

function familyOf(sample: string, families: Map<string, Family>): Family | undefined {
  for (const suffix of ['', '_bucket', '_count', '_sum']) {
    if (!sample.endsWith(suffix)) continue;
    const f = families.get(sample.slice(0, sample.length - suffix.length));
    if (f && (suffix === '' || f.type === 'histogram' || f.type === 'summary')) return f;
  }
  return undefined;
}

export function parseExposition(text: string): Map<string, Family> {
  if (!text.endsWith('\n')) throw new Error('the exposition must end with a newline');
  const families = new Map<string, Family>();
  let current: Family | undefined;
  const finished = new Set<string>();
  for (const [i, line] of text.slice(0, -1).split('\n').entries()) {
    const where = `line ${i + 1}: ${JSON.stringify(line)}`;
    if (line === '') continue;
    let m: RegExpExecArray | null;
    if ((m = new RegExp(`^# HELP (${NAME}) (.*)$`).exec(line))) {
      if (families.has(m[1]!)) throw new Error(`${where}: family declared twice`);
      if (current) finished.add(current.name);
      current = { name: m[1]!, type: '', help: m[2]!, samples: [] };
      families.set(current.name, current);
      continue;
    }
    if ((m = new RegExp(`^# TYPE (${NAME}) (\\w+)$`).exec(line))) {
      if (!current || current.name !== m[1] || current.type) throw new Error(`${where}: TYPE must follow its HELP, once`);
      if (!TYPES.has(m[2]!)) throw new Error(`${where}: unknown type`);
      current.type = m[2]!;
      continue;
    }
    if (line.startsWith('#')) throw new Error(`${where}: unknown comment`);
    if (!(m = SAMPLE.exec(line))) throw new Error(`${where}: not a sample`);
    const f = familyOf(m[1]!, families);
    if (!f || !f.type) throw new Error(`${where}: sample before its family's TYPE`);
    if (f !== current || finished.has(f.name)) throw new Error(`${where}: samples of a family must be together`);
    const value = m[3] === '+Inf' || m[3] === 'Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : Number(m[3]);
    f.samples.push({ name: m[1]!, labels: parseLabels(m[2]), value });
  }
  for (const f of families.values()) if (f.type === 'histogram') checkHistogram(f);
  return families;
}

function checkHistogram(f: Family): void {
  const series = new Map<string, Sample[]>();
  for (const s of f.samples) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(rest);
    if (s.name.endsWith('_bucket')) {
      if (le === undefined) throw new Error(`${f.name}: bucket without le`);
      series.set(key, [...(series.get(key) ?? []), s]);
    }
  }
  for (const [key, buckets] of series) {
    let last = -Infinity;
    let prevLe = -Infinity;
    for (const b of buckets) {
      const le = b.labels.le === '+Inf' ? Infinity : Number(b.labels.le);
      if (!(le > prevLe) || b.value < last) throw new Error(`${f.name}${key}: buckets not cumulative in le order`);
      prevLe = le;
      last = b.value;
    }
    if (prevLe !== Infinity) throw new Error(`${f.name}${key}: no +Inf bucket`);
    const count = f.samples.find((s) => s.name === `${f.name}_count` && JSON.stringify(s.labels) === key);
    if (!count || count.value !== last) throw new Error(`${f.name}${key}: _count differs from the +Inf bucket`);
  }
}

/** The value of one sample, by family and exact labels (undefined when absent). */
export function valueOf(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number | undefined {
  const f = familyOf(name, families);
  return f?.samples.find((s) => s.name === name && JSON.stringify(s.labels) === JSON.stringify(labels))?.value;
}
