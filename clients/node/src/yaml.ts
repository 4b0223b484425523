// beanstalkd's YAML: `---\n` then `key: value\n` lines (stats*) or `- item\n`
// lines (list*), printed with printf, never nested or escaped. The field
// tables below mirror protocol/stats.json (a test keeps them equal) and give
// every stats document a type with numbers as numbers.

/** How a field is printed: stats.json's types. `id` is a job id; `decimal` has fixed decimals. */
export type FieldType = 'integer' | 'id' | 'string' | 'boolean' | 'decimal';
/**
 * A type with `?`: one of redstalk's extension fields, which its YAML does not print (yet),
 * or prints only when set (stats-tube's settings and counts of put-with and tube-set).
 */
type Field = FieldType | `${FieldType}?`;
type Fields = Record<string, Field>;

type ValueOf<T extends Field> = T extends 'string' | 'string?' ? string : T extends 'boolean' | 'boolean?' ? boolean : number;
/** A parsed stats document: each field of the table with its value, the extension fields optional. */
export type Document<F extends Fields> =
  & { -readonly [K in keyof F as F[K] extends FieldType ? K : never]: ValueOf<F[K]> }
  & { -readonly [K in keyof F as F[K] extends FieldType ? never : K]?: ValueOf<F[K]> };

export const SERVER_STATS = {
  'current-jobs-urgent': 'integer', 'current-jobs-ready': 'integer', 'current-jobs-reserved': 'integer',
  'current-jobs-delayed': 'integer', 'current-jobs-buried': 'integer', 'cmd-put': 'integer',
  'cmd-peek': 'integer', 'cmd-peek-ready': 'integer', 'cmd-peek-delayed': 'integer',
  'cmd-peek-buried': 'integer', 'cmd-reserve': 'integer', 'cmd-reserve-with-timeout': 'integer',
  'cmd-delete': 'integer', 'cmd-release': 'integer', 'cmd-use': 'integer', 'cmd-watch': 'integer',
  'cmd-ignore': 'integer', 'cmd-bury': 'integer', 'cmd-kick': 'integer', 'cmd-touch': 'integer',
  'cmd-stats': 'integer', 'cmd-stats-job': 'integer', 'cmd-stats-tube': 'integer',
  'cmd-list-tubes': 'integer', 'cmd-list-tube-used': 'integer', 'cmd-list-tubes-watched': 'integer',
  'cmd-pause-tube': 'integer', 'cmd-reserve-many': 'integer?', 'cmd-put-with': 'integer?',
  'cmd-tube-set': 'integer?', 'job-timeouts': 'integer',
  'total-jobs': 'integer', 'max-job-size': 'integer', 'current-tubes': 'integer',
  'current-connections': 'integer', 'current-producers': 'integer', 'current-workers': 'integer',
  'current-waiting': 'integer', 'total-connections': 'integer', 'pid': 'integer', 'version': 'string',
  'rusage-utime': 'decimal', 'rusage-stime': 'decimal', 'uptime': 'integer',
  'binlog-oldest-index': 'integer', 'binlog-current-index': 'integer', 'binlog-records-migrated': 'integer',
  'binlog-records-written': 'integer', 'binlog-max-size': 'integer', 'draining': 'boolean', 'id': 'string',
  'hostname': 'string', 'os': 'string', 'platform': 'string',
} as const satisfies Fields;

export const TUBE_STATS = {
  'name': 'string', 'current-jobs-urgent': 'integer', 'current-jobs-ready': 'integer',
  'current-jobs-reserved': 'integer', 'current-jobs-delayed': 'integer', 'current-jobs-buried': 'integer',
  'total-jobs': 'integer', 'current-using': 'integer', 'current-watching': 'integer',
  'current-waiting': 'integer', 'cmd-delete': 'integer', 'cmd-pause-tube': 'integer', 'pause': 'integer',
  'pause-time-left': 'integer', 'max-reserved': 'integer?', 'reserve-rate': 'integer?', 'dedup-window': 'integer?',
  'jobs-expired': 'integer?', 'duplicate-puts': 'integer?',
} as const satisfies Fields;

export const JOB_STATS = {
  'id': 'id', 'tube': 'string', 'state': 'string', 'pri': 'integer', 'age': 'integer', 'delay': 'integer',
  'ttr': 'integer', 'time-left': 'integer', 'file': 'integer', 'reserves': 'integer', 'timeouts': 'integer',
  'releases': 'integer', 'buries': 'integer', 'kicks': 'integer',
} as const satisfies Fields;

export const ROOM_STATS = {
  'name': 'string', 'capacity': 'integer', 'checkin-timeout': 'integer', 'participant-timeout': 'integer',
  'grace': 'integer', 'rate-limit': 'integer', 'paused': 'boolean', 'lottery-time-left': 'integer',
  'configured': 'boolean', 'participants': 'integer', 'tickets': 'integer', 'waiting': 'integer',
  'open-places': 'integer', 'admitted-total': 'integer', 'dropouts-total': 'integer',
  'left-total': 'integer', 'participant-timeouts-total': 'integer', 'tickets-used-total': 'integer',
  'tickets-expired-total': 'integer', 'admission-rate': 'decimal', 'last-in-line-eta': 'integer',
} as const satisfies Fields;

/** The tables by stats.json's document name (a command's `yaml`). */
export const DOCUMENTS = {
  'stats': SERVER_STATS,
  'stats-tube': TUBE_STATS,
  'stats-job': JOB_STATS,
  'stats-room': ROOM_STATS,
} as const;

export type ServerStats = Document<typeof SERVER_STATS>;
export type TubeStats = Document<typeof TUBE_STATS>;
/** `state` is one of ready, delayed, reserved, buried. */
export type JobStats = Document<typeof JOB_STATS>;
export type RoomStats = Document<typeof ROOM_STATS>;

/** `"x"` → `x`: beanstalkd 1.13 quotes some strings and escapes nothing. */
function unquote(value: string): string {
  return value.length >= 2 && value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value;
}

function lines(yaml: Buffer): string[] {
  const text = yaml.toString('utf8');
  const all = text.split('\n');
  if (all[0] === '---') all.shift();
  if (all.at(-1) === '') all.pop();
  return all;
}

/** `- item` lines (list-tubes, list-tubes-watched, list-rooms). */
export function parseList(yaml: Buffer): string[] {
  return lines(yaml).filter((l) => l.startsWith('- ')).map((l) => unquote(l.slice(2)));
}

/** `key: value` lines, values unquoted but still text. */
export function parseMap(yaml: Buffer): Record<string, string> {
  const map: Record<string, string> = {};
  for (const l of lines(yaml)) {
    const colon = l.indexOf(': ');
    if (colon > 0) map[l.slice(0, colon)] = unquote(l.slice(colon + 2));
  }
  return map;
}

function convert(value: string, field: Field | undefined): string | number | boolean {
  switch (field?.replace('?', '')) {
    case 'string': return value;
    case 'boolean': return value === 'true';
    case 'integer': case 'id': case 'decimal': return Number(value);
    // A field this client does not know (a newer server): numbers still become numbers.
    default: return /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value;
  }
}

/** A stats document, each value converted by its field's type. */
export function parseDocument<F extends Fields>(yaml: Buffer, fields: F): Document<F> {
  const doc: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(parseMap(yaml))) doc[key] = convert(value, fields[key]);
  return doc as Document<F>;
}
