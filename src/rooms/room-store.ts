// The Redis side of waiting rooms: every operation is one Lua script
// (lua/room*.lua, helpers in lua/includes/room.lua) on Redis' clock, with
// the keys of Keys.room. The scripts are registered with ioredis by the job
// store (defineScripts registers every lua/*.lua file); this class calls them.
import { randomBytes } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import type { Keys } from '../store/keys.js';
import { scriptMethod } from '../store/scripts.js';

/** A room's settings, in seconds (room-config; the sidecar's flags give the defaults). */
export interface RoomSettings {
  capacity: number;
  checkinTimeout: number;
  participantTimeout: number;
  grace: number;
}

/** The answer to enter and check: inside (or free to enter), or waiting. */
export type Standing = { waiting: false } | { waiting: true; position: number; etaSeconds: number };

export interface RoomStats extends RoomSettings {
  rateLimit: number;
  paused: boolean;
  lotteryMsLeft: number;
  configured: boolean;
  participants: number;
  tickets: number;
  waiting: number;
  openPlaces: number;
  admittedTotal: number;
  dropoutsTotal: number;
  leftTotal: number;
  participantTimeoutsTotal: number;
  ticketsUsedTotal: number;
  ticketsExpiredTotal: number;
  /** Admissions per minute, decayed (three decimals, as text). */
  admissionRate: string;
  lastInLineEtaSeconds: number;
}

const SCRIPTS = ['roomEnter', 'roomCheck', 'roomLeave', 'roomConfig', 'roomLottery', 'roomStats', 'roomList'] as const;
type ScriptName = (typeof SCRIPTS)[number];
type ScriptFn = (...args: Array<string | number>) => Promise<unknown>;

function standing(reply: unknown): Standing {
  const [inside, position, eta] = reply as number[];
  return inside === 1 ? { waiting: false } : { waiting: true, position: position!, etaSeconds: eta! };
}

export class RoomStore {
  private readonly scripts: Record<ScriptName, ScriptFn>;

  constructor(redis: Redis | Cluster, private readonly keys: Keys, private readonly defaults: RoomSettings) {
    const methods = redis as unknown as Record<string, ScriptFn | undefined>;
    this.scripts = Object.fromEntries(SCRIPTS.map((name) => {
      const fn = methods[scriptMethod(name)];
      if (!fn) throw new Error(`redstalk: script ${name} is not registered (defineScripts runs first)`);
      return [name, fn.bind(redis)];
    })) as Record<ScriptName, ScriptFn>;
  }

  private run(script: ScriptName, room: string, args: Array<string | number>): Promise<unknown> {
    const keys = this.keys.room(room);
    return this.scripts[script](keys.length, ...keys, room, ...args);
  }

  /** Scripts that read the room's settings get the sidecar's defaults for those it lacks. */
  private runWithDefaults(script: ScriptName, room: string, user: string): Promise<unknown> {
    const d = this.defaults;
    return this.run(script, room, [user, d.capacity, d.checkinTimeout, d.participantTimeout, d.grace]);
  }

  async enter(room: string, user: string): Promise<Standing> {
    return standing(await this.runWithDefaults('roomEnter', room, user));
  }

  async check(room: string, user: string): Promise<Standing> {
    return standing(await this.runWithDefaults('roomCheck', room, user));
  }

  /** False when the user was neither inside, in line, nor holding a grace ticket. */
  async leave(room: string, user: string): Promise<boolean> {
    return (await this.runWithDefaults('roomLeave', room, user)) === 1;
  }

  async configure(room: string, s: RoomSettings): Promise<void> {
    await this.run('roomConfig', room, ['capacity', s.capacity, 'checkin-timeout', s.checkinTimeout,
      'participant-timeout', s.participantTimeout, 'grace', s.grace]);
  }

  /** At most perMinute admissions in any minute; 0 lifts the limit. */
  async limitRate(room: string, perMinute: number): Promise<void> {
    await this.run('roomConfig', room, ['rate-limit', perMinute]);
  }

  async pause(room: string, paused: boolean): Promise<void> {
    await this.run('roomConfig', room, ['paused', paused ? 1 : 0]);
  }

  /** Opens (or moves the start of) a pre-queue whose order is drawn by lot; 0 starts the event now. */
  async startLottery(room: string, seconds: number): Promise<void> {
    // The salt (from the sidecar's CSPRNG, never from a clock) makes the draws unpredictable.
    await this.run('roomLottery', room, [seconds, randomBytes(16).toString('hex')]);
  }

  async stats(room: string): Promise<RoomStats | null> {
    const r = (await this.runWithDefaults('roomStats', room, '')) as Array<number | string>;
    if (r.length === 0) return null;
    const n = (i: number) => Number(r[i]);
    return {
      capacity: n(0), checkinTimeout: n(1), participantTimeout: n(2), grace: n(3), rateLimit: n(4),
      paused: n(5) === 1, lotteryMsLeft: n(6), configured: n(7) === 1,
      participants: n(8), tickets: n(9), waiting: n(10), openPlaces: n(11),
      admittedTotal: n(12), dropoutsTotal: n(13), leftTotal: n(14), participantTimeoutsTotal: n(15),
      ticketsUsedTotal: n(16), ticketsExpiredTotal: n(17), admissionRate: String(r[18]), lastInLineEtaSeconds: n(19),
    };
  }

  /** The rooms that exist, by name. */
  async list(): Promise<string[]> {
    const names = (await this.scripts.roomList(1, this.keys.rooms)) as string[];
    return names.sort();
  }
}
