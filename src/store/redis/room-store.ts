// The waiting-room store on Redis: every operation is one Lua script
// (lua/rooms/, helpers in lua/includes/room.lua) on Redis' clock, with the
// keys of ShardKeys.room in the shard the room's name hashes to.
import { randomBytes } from 'node:crypto';
import type { RoomSettings, RoomState, RoomStore, Standing } from '../room-store.js';
import type { Layout } from '../layout.js';
import { mapped } from './connect.js';
import type { BoundScript } from './functions.js';

/** rooms/state.lua's reply, in order. */
export const ROOM_STATE_REPLY = ['capacity', 'checkinTimeout', 'participantTimeout', 'grace', 'rateLimit',
  'paused', 'lotteryMsLeft', 'configured', 'participants', 'tickets', 'waiting', 'openPlaces',
  'admittedTotal', 'dropoutsTotal', 'leftTotal', 'participantTimeoutsTotal', 'ticketsUsedTotal',
  'ticketsExpiredTotal', 'admissionRate', 'lastInLineEtaSeconds'] as const;

function standing(reply: unknown): Standing {
  const [inside, position, eta] = reply as number[];
  return inside === 1 ? { waiting: false } : { waiting: true, position: position!, etaSeconds: eta! };
}

export class RedisRoomStore implements RoomStore {
  constructor(
    private readonly scripts: ReadonlyMap<string, BoundScript>,
    private readonly layout: Layout,
    /** Settings of rooms that have none of their own (room-config). */
    private readonly defaults: RoomSettings,
  ) {}

  private run(script: string, room: string, args: Array<string | number>): Promise<unknown> {
    const keys = this.layout.keys(this.layout.shardOf(room)).room(room);
    return mapped(this.scripts.get(script)!.strings(keys.length, ...keys, room, ...args));
  }

  /** Scripts that read the room's settings get the sidecar's defaults for those it lacks. */
  private runWithDefaults(script: string, room: string, user: string): Promise<unknown> {
    const d = this.defaults;
    return this.run(script, room, [user, d.capacity, d.checkinTimeout, d.participantTimeout, d.grace]);
  }

  async enter(room: string, user: string): Promise<Standing> {
    return standing(await this.runWithDefaults('enter', room, user));
  }

  async check(room: string, user: string): Promise<Standing> {
    return standing(await this.runWithDefaults('check', room, user));
  }

  async leave(room: string, user: string): Promise<boolean> {
    return (await this.runWithDefaults('leave', room, user)) === 1;
  }

  async configure(room: string, s: RoomSettings): Promise<void> {
    await this.run('config', room, ['capacity', s.capacity, 'checkin-timeout', s.checkinTimeout,
      'participant-timeout', s.participantTimeout, 'grace', s.grace]);
  }

  async limitRate(room: string, perMinute: number): Promise<void> {
    await this.run('config', room, ['rate-limit', perMinute]);
  }

  async pause(room: string, paused: boolean): Promise<void> {
    await this.run('config', room, ['paused', paused ? 1 : 0]);
  }

  async startLottery(room: string, seconds: number): Promise<void> {
    // The salt (from the sidecar's CSPRNG, never from a clock) makes the draws unpredictable.
    await this.run('lottery', room, [seconds, randomBytes(16).toString('hex')]);
  }

  async state(room: string): Promise<RoomState | null> {
    const r = (await this.runWithDefaults('state', room, '')) as Array<number | string>;
    if (r.length === 0) return null;
    const v = Object.fromEntries(ROOM_STATE_REPLY.map((name, i) => [name, Number(r[i])])) as Record<(typeof ROOM_STATE_REPLY)[number], number>;
    return { ...v, paused: v.paused === 1, configured: v.configured === 1, admissionRate: String(r[ROOM_STATE_REPLY.indexOf('admissionRate')]) };
  }

  async list(): Promise<string[]> {
    const list = this.scripts.get('list')!.strings;
    const shards = Array.from({ length: this.layout.shards }, (_, i) => mapped(list(1, this.layout.keys(i).rooms)) as Promise<string[]>);
    return (await Promise.all(shards)).flat().sort();
  }
}
