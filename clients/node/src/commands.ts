// What each command's replies mean: one decoder per command of
// protocol/commands.json, turning its success replies into a typed value and
// every other reply into the error class of its word.
import { BuriedError, errorFor, UnexpectedReplyError } from './errors.js';
import type { Reply } from './reader.js';
import { JOB_STATS, parseDocument, parseList, ROOM_STATS, SERVER_STATS, TUBE_STATS } from './yaml.js';

/** A reserved or peeked job. */
export interface Job {
  id: number;
  body: Buffer;
}

/** `put-with`: the job's id, and whether an earlier put of its key had stored it (`DUPLICATE`: nothing stored now). */
export interface PutResult {
  id: number;
  duplicate: boolean;
}

/** `enter`: inside, or waiting in line. */
export type Entry = { state: 'entered' } | Waiting;
/** `check`: may enter now, or waiting in line. */
export type Check = { state: 'ready' } | Waiting;
/** A place in a room's line; `etaSeconds` 0 means no estimate. */
export interface Waiting { state: 'waiting'; position: number; etaSeconds: number }

type Decoder<T> = (reply: Reply) => T;

/** A decoder that answers the listed success words and throws the error of any other. */
function on<T>(command: string, cases: Record<string, Decoder<T>>): Decoder<T> {
  return (reply) => {
    const decode = cases[reply.word];
    if (!decode) throw errorFor(reply, command);
    return decode(reply);
  };
}

/** A whole number in a reply, e.g. the id of `INSERTED <id>`. */
function int(reply: Reply, command: string, i: number): number {
  const s = reply.args[i];
  if (s === undefined || !/^\d+$/.test(s)) throw new UnexpectedReplyError(reply, command);
  return Number(s);
}

function body(reply: Reply, command: string): Buffer {
  if (!reply.body) throw new UnexpectedReplyError(reply, command);
  return reply.body;
}

const nothing = () => undefined;

function job(command: string) {
  return on(command, { RESERVED: (r): Job => ({ id: int(r, command, 0), body: body(r, command) }) });
}

/** The RESERVED blocks of a RESERVED-MANY. */
const reservedBlock = job('reserve-many');

function found(command: string) {
  return on(command, { FOUND: (r): Job => ({ id: int(r, command, 0), body: body(r, command) }) });
}

function waiting(command: string) {
  return (r: Reply): Waiting => ({ state: 'waiting', position: int(r, command, 0), etaSeconds: int(r, command, 1) });
}

function list(command: string) {
  return on(command, { OK: (r) => parseList(body(r, command)) });
}

/** Every command's decoder, by its name in commands.json. */
export const DECODERS = {
  'put': on('put', {
    INSERTED: (r) => int(r, 'put', 0),
    BURIED: (r) => { throw new BuriedError(r.line); },
  }),
  'put-with': on<PutResult>('put-with', {
    INSERTED: (r) => ({ id: int(r, 'put-with', 0), duplicate: false }),
    DUPLICATE: (r) => ({ id: int(r, 'put-with', 0), duplicate: true }),
  }),
  'use': on('use', { USING: (r) => r.args.join(' ') }),
  'reserve': job('reserve'),
  'reserve-with-timeout': job('reserve-with-timeout'),
  'reserve-job': job('reserve-job'),
  'reserve-many': on('reserve-many', { 'RESERVED-MANY': (r) => (r.jobs ?? []).map(reservedBlock) }),
  'delete': on('delete', { DELETED: nothing }),
  'release': on('release', { RELEASED: nothing }),
  'bury': on('bury', { BURIED: nothing }),
  'touch': on('touch', { TOUCHED: nothing }),
  'watch': on('watch', { WATCHING: (r) => int(r, 'watch', 0) }),
  'ignore': on('ignore', { WATCHING: (r) => int(r, 'ignore', 0) }),
  'peek': found('peek'),
  'peek-ready': found('peek-ready'),
  'peek-delayed': found('peek-delayed'),
  'peek-buried': found('peek-buried'),
  'kick': on('kick', { KICKED: (r) => int(r, 'kick', 0) }),
  'kick-job': on('kick-job', { KICKED: nothing }),
  'stats-job': on('stats-job', { OK: (r) => parseDocument(body(r, 'stats-job'), JOB_STATS) }),
  'stats-tube': on('stats-tube', { OK: (r) => parseDocument(body(r, 'stats-tube'), TUBE_STATS) }),
  'stats': on('stats', { OK: (r) => parseDocument(body(r, 'stats'), SERVER_STATS) }),
  'list-tubes': list('list-tubes'),
  'list-tube-used': on('list-tube-used', { USING: (r) => r.args.join(' ') }),
  'list-tubes-watched': list('list-tubes-watched'),
  'pause-tube': on('pause-tube', { PAUSED: nothing }),
  'tube-set': on('tube-set', { OK: nothing }),
  'enter': on<Entry>('enter', { ENTERED: () => ({ state: 'entered' }), WAITING: waiting('enter') }),
  'check': on<Check>('check', { READY: () => ({ state: 'ready' }), WAITING: waiting('check') }),
  'leave': on('leave', { LEFT: nothing }),
  'room-config': on('room-config', { OK: nothing }),
  'room-rate': on('room-rate', { OK: nothing }),
  'pause-room': on('pause-room', { OK: nothing }),
  'room-lottery': on('room-lottery', { OK: nothing }),
  'stats-room': on('stats-room', { OK: (r) => parseDocument(body(r, 'stats-room'), ROOM_STATS) }),
  'list-rooms': list('list-rooms'),
  'auth': on('auth', { OK: nothing }),
};

/** Every command that has a reply (all but `quit`). */
export type CommandName = keyof typeof DECODERS;
/** What a command's success reply decodes to. */
export type Result<C extends CommandName> = ReturnType<(typeof DECODERS)[C]>;
