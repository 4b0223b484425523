/**
 * Deliberate divergences between the reference beanstalkd (Debian ships 1.12)
 * and redstalk (which follows beanstalkd 1.13, plus two extensions).
 *
 * This is the ONE place the list lives. The engine only tolerates a difference
 * between the two targets when it is covered by an entry here:
 *  - `yaml-quoting` is handled by the normaliser (values compared with the quotes
 *    stripped, and each target's quoting is checked against its own dialect);
 *  - the others are declared per step in the scenario files with a
 *    `~ <id>: <expected redstalk reply>` line, which replaces the comparison for
 *    that step by an assertion on redstalk's reply.
 *
 * Copy this table into protocol/PROTOCOL.md ("Deliberate differences").
 */
export interface DeliberateDivergence {
  /** Stable id used in scenario files (`~ <id>: ...`) and in reports. */
  id: string;
  /** The command or field concerned. */
  area: string;
  /** What the reference beanstalkd 1.12 does. */
  beanstalkd112: string;
  /** What redstalk does (= beanstalkd 1.13, unless stated). */
  redstalk: string;
  /** How the differential suite handles it. */
  handling: 'normaliser' | 'declared-per-step';
}

export const DELIBERATE_DIVERGENCES: readonly DeliberateDivergence[] = [
  {
    id: 'yaml-quoting',
    area: 'stats `hostname`/`os`/`platform`, stats-tube `name`, stats-job `tube`',
    beanstalkd112: 'values are bare (only `version` is double-quoted)',
    redstalk: 'values are double-quoted, as in beanstalkd 1.13 (#592, #610)',
    handling: 'normaliser',
  },
  {
    id: 'reserve-timeout-parse',
    area: '`reserve-with-timeout <seconds>` with a negative, non-numeric (incl. `+N`) or > 2147483647 argument',
    beanstalkd112: 'parsed with strtol: a negative value waits like plain `reserve`, a non-numeric one acts as 0, `+N` and values above INT_MAX are accepted',
    redstalk: '`BAD_FORMAT`, as in beanstalkd 1.13 (#607: digits only, 0..2147483647)',
    handling: 'declared-per-step',
  },
  {
    id: 'case-insensitive-commands',
    area: 'command words (`PUT`, `Stats`, `LIST-TUBE-USED`, ...)',
    beanstalkd112: '`UNKNOWN_COMMAND` (matching is case-sensitive in every beanstalkd version)',
    redstalk: 'command words are matched case-insensitively (redstalk extension; arguments and tube names stay case-sensitive)',
    handling: 'declared-per-step',
  },
  {
    id: 'room-commands',
    area: 'waiting-room commands (`enter`, `check`, `leave`, `room-config`, `room-rate`, `pause-room`, `room-lottery`, `stats-room`, `list-rooms`)',
    beanstalkd112: '`UNKNOWN_COMMAND` (`stats-room ...` matches `stats` and is `BAD_FORMAT`)',
    redstalk: 'waiting rooms (redstalk extension, protocol/PROTOCOL.md), matched by prefix like every command (`list-roomsx` is `BAD_FORMAT`) and before beanstalkd\'s',
    handling: 'declared-per-step',
  },
];

export function deliberateById(id: string): DeliberateDivergence | undefined {
  return DELIBERATE_DIVERGENCES.find((d) => d.id === id);
}
