// The command table, loaded once from protocol/commands.json (the single
// source shared with clients and tests) and turned into lookup structures.
import commandsJson from '../../protocol/commands.json' with { type: 'json' };

export type ArgType = 'u32' | 'u64' | 'seconds' | 'timeout' | 'lenient-u32' | 'tube' | 'tube-lenient' | 'name' | 'token' | 'key' | 'choice';

export interface CommandSpec {
  name: string;
  /** Literal prefix, lower case. */
  match: string;
  exact?: boolean;
  /** min/max bound u32, seconds and timeout values; `values` are a choice's words. */
  args: Array<{ name: string; type: ArgType; min?: number; max?: number; values?: string[] }>;
  trailing?: 'reject' | 'ignore';
  body?: { lengthFrom: string; terminator: string };
  role?: 'producer' | 'worker';
  counter?: string;
  /** The YAML document of its `OK <bytes>` reply (protocol/stats.json), or 'list'. */
  yaml?: string;
  replies: string[];
  extension?: boolean;
}

export interface ProtocolSpec {
  limits: {
    lineBytes: number;
    tubeNameBytes: number;
    defaultMaxJobSize: number;
    maxJobSizeCap: number;
    urgentBelowPri: number;
    safetyMarginSeconds: number;
    reserveTimeoutMax: number;
    reserveRateMax: number;
  };
  nameChars: string;
  errors: string[];
  /** Replies followed by a body: a job's bytes, or a YAML document. */
  replyBodies: Record<string, { lengthFrom: string; terminator: string; content: 'job' | 'yaml' | 'reserved-jobs' }>;
  commands: CommandSpec[];
}

export const PROTOCOL = commandsJson as unknown as ProtocolSpec;
export const LIMITS = PROTOCOL.limits;
export const COMMANDS: readonly CommandSpec[] = PROTOCOL.commands;

/**
 * The order lines are matched in: redstalk's extension commands first (none
 * is a prefix of a beanstalkd literal, but `stats` is a prefix of
 * `stats-room `), then beanstalkd's own table in which_cmd order.
 */
export const MATCH_ORDER: readonly CommandSpec[] = [...COMMANDS.filter((c) => c.extension), ...COMMANDS.filter((c) => !c.extension)];

/** Longest match literal: the part of a line lower-cased for matching. */
export const LONGEST_MATCH = Math.max(...COMMANDS.map((c) => c.match.length));

const NAME_CHAR = new Uint8Array(256);
for (const ch of PROTOCOL.nameChars) NAME_CHAR[ch.charCodeAt(0)] = 1;

/** Length of the run of tube-name characters in s starting at i. */
export function nameSpan(s: string, i: number): number {
  let j = i;
  while (j < s.length && NAME_CHAR[s.charCodeAt(j)] === 1) j++;
  return j - i;
}

/** The longest put-with key. */
export const KEY_BYTES = 128;

/** beanstalkd's name_is_ok: 1..200 name characters, not starting with '-'. */
export function isValidName(s: string): boolean {
  return s.length > 0 && s.length <= LIMITS.tubeNameBytes && s.charCodeAt(0) !== 45 && nameSpan(s, 0) === s.length;
}
