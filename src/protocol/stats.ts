// The YAML documents of the OK replies (stats, stats-tube, stats-job,
// stats-room), field by field, loaded once from protocol/stats.json: the one
// field list that the replies, the typed stats model (generated.ts) and
// clients share.
import statsJson from '../../protocol/stats.json' with { type: 'json' };
import type { StatsDocuments } from './generated.js';

export type FieldType = 'integer' | 'id' | 'string' | 'boolean' | 'decimal';
export interface FieldSpec { name: string; type: FieldType; help: string; quoted?: boolean; extension?: boolean }
export interface DocumentSpec { command: string; fields: FieldSpec[] }

export const STATS_DOCUMENTS = (statsJson as unknown as { documents: Record<keyof StatsDocuments, DocumentSpec> }).documents;

/** Every per-command counter of `stats`, in the order 1.13 prints them. */
export const COMMAND_COUNTERS: readonly string[] = STATS_DOCUMENTS.stats.fields.map((f) => f.name).filter((n) => n.startsWith('cmd-'));

/** The fields each YAML reply prints: beanstalkd's (redstalk's own extension fields are left to the model). */
const PRINTED = Object.fromEntries(Object.entries(STATS_DOCUMENTS).map(([d, spec]) => [d, spec.fields.filter((f) => !f.extension)])) as
  Record<keyof StatsDocuments, FieldSpec[]>;

/** A document as beanstalkd prints it with printf: "---\n", then "key: value\n" per field, no escaping. */
export function renderDocument<D extends keyof StatsDocuments>(document: D, values: StatsDocuments[D]): string {
  const v = values as unknown as Record<string, string | number | boolean>;
  let out = '---\n';
  for (const f of PRINTED[document]) out += f.quoted ? `${f.name}: "${v[f.name]}"\n` : `${f.name}: ${v[f.name]}\n`;
  return out;
}
