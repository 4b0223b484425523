// The YAML documents of the OK replies (stats, stats-tube, stats-job,
// stats-room), field by field, loaded once from protocol/stats.json: the one
// field list that the replies, the typed stats model (generated.ts) and
// clients share.
import statsJson from '../../protocol/stats.json' with { type: 'json' };
import type { StatsDocuments } from './generated.js';

export type FieldType = 'integer' | 'id' | 'string' | 'boolean' | 'decimal';
export interface FieldSpec {
  name: string; type: FieldType; help: string; quoted?: boolean; extension?: boolean;
  /** Printed after beanstalkd's fields only when one of the document's whenSet fields is not its default. */
  whenSet?: boolean; default?: number;
}
export interface DocumentSpec { command: string; fields: FieldSpec[] }

export const STATS_DOCUMENTS = (statsJson as unknown as { documents: Record<keyof StatsDocuments, DocumentSpec> }).documents;

/** Every per-command counter of `stats`, in the order 1.13 prints them. */
export const COMMAND_COUNTERS: readonly string[] = STATS_DOCUMENTS.stats.fields.map((f) => f.name).filter((n) => n.startsWith('cmd-'));

/** The fields each YAML reply prints: beanstalkd's (redstalk's own extension fields are left to the model). */
const PRINTED = Object.fromEntries(Object.entries(STATS_DOCUMENTS).map(([d, spec]) => [d, spec.fields.filter((f) => !f.extension && !f.whenSet)])) as
  Record<keyof StatsDocuments, FieldSpec[]>;
/** redstalk's fields printed when set (a tube's settings and put-with counts), so plain traffic sees beanstalkd's reply. */
const WHEN_SET = Object.fromEntries(Object.entries(STATS_DOCUMENTS).map(([d, spec]) => [d, spec.fields.filter((f) => f.whenSet)])) as
  Record<keyof StatsDocuments, FieldSpec[]>;

/** A document as beanstalkd prints it with printf: "---\n", then "key: value\n" per field, no escaping. */
export function renderDocument<D extends keyof StatsDocuments>(document: D, values: StatsDocuments[D]): string {
  const v = values as unknown as Record<string, string | number | boolean>;
  let out = '---\n';
  const extra = WHEN_SET[document];
  const fields = extra.some((f) => v[f.name] !== (f.default ?? 0)) ? [...PRINTED[document], ...extra] : PRINTED[document];
  for (const f of fields) out += f.quoted ? `${f.name}: "${v[f.name]}"\n` : `${f.name}: ${v[f.name]}\n`;
  return out;
}
