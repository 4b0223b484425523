// What the server may ask of a waiting-room store (protocol/PROTOCOL.md,
// "Waiting rooms"). Every operation is atomic in the store, on its clock.

/** A room's settings, in seconds (room-config; the sidecar's settings give the defaults). */
export interface RoomSettings {
  capacity: number;
  checkinTimeout: number;
  participantTimeout: number;
  grace: number;
}

/** The answer to enter and check: inside (or free to enter), or waiting. */
export type Standing = { waiting: false } | { waiting: true; position: number; etaSeconds: number };

/** A room as it is now, with times in ms (the server renders stats-room from it). */
export interface RoomState extends RoomSettings {
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

export interface RoomStore {
  enter(room: string, user: string): Promise<Standing>;
  check(room: string, user: string): Promise<Standing>;
  /** False when the user was neither inside, in line, nor holding a grace ticket. */
  leave(room: string, user: string): Promise<boolean>;
  configure(room: string, settings: RoomSettings): Promise<void>;
  /** At most perMinute admissions in any minute; 0 lifts the limit. */
  limitRate(room: string, perMinute: number): Promise<void>;
  pause(room: string, paused: boolean): Promise<void>;
  /** Opens (or moves the start of) a pre-queue whose order is drawn by lot; 0 starts the event now. */
  startLottery(room: string, seconds: number): Promise<void>;
  state(room: string): Promise<RoomState | null>;
  /** The rooms that exist, by name. */
  list(): Promise<string[]>;
}
