// The waiting-room commands (protocol/PROTOCOL.md, "Waiting rooms"), spread
// into the dispatcher's HANDLERS by src/server/commands.ts. Each turns its
// parsed arguments (names and bounds are checked by the parser, from
// protocol/commands.json) into one RoomStore call and a reply.
import { line, okReply, REPLY } from '../protocol/replies.js';
import { yamlDict, yamlList } from '../protocol/yaml.js';
import type { Connection } from '../server/connection.js';
import type { Standing } from './room-store.js';

type RoomHandler = (c: Connection, args: Array<number | string>) => Promise<void>;

function standingReply(s: Standing, inside: Buffer): Buffer {
  return s.waiting ? line(`WAITING ${s.position} ${s.etaSeconds}`) : inside;
}

export const ROOM_HANDLERS: Record<string, RoomHandler> = {
  async enter(c, [room, user]) {
    c.send(standingReply(await c.sidecar.rooms.enter(room as string, user as string), REPLY.ENTERED));
  },
  async check(c, [room, user]) {
    c.send(standingReply(await c.sidecar.rooms.check(room as string, user as string), REPLY.READY));
  },
  async leave(c, [room, user]) {
    c.send((await c.sidecar.rooms.leave(room as string, user as string)) ? REPLY.LEFT : REPLY.NOT_FOUND);
  },
  async 'room-config'(c, [room, capacity, checkinTimeout, participantTimeout, grace]) {
    await c.sidecar.rooms.configure(room as string, {
      capacity: capacity as number, checkinTimeout: checkinTimeout as number,
      participantTimeout: participantTimeout as number, grace: grace as number,
    });
    c.send(REPLY.OK);
  },
  async 'room-rate'(c, [room, perMinute]) {
    await c.sidecar.rooms.limitRate(room as string, perMinute as number);
    c.send(REPLY.OK);
  },
  async 'pause-room'(c, [room, paused]) {
    await c.sidecar.rooms.pause(room as string, paused === 1);
    c.send(REPLY.OK);
  },
  async 'room-lottery'(c, [room, seconds]) {
    await c.sidecar.rooms.startLottery(room as string, seconds as number);
    c.send(REPLY.OK);
  },
  async 'stats-room'(c, [room]) {
    const s = await c.sidecar.rooms.stats(room as string);
    if (!s) return c.send(REPLY.NOT_FOUND);
    c.send(okReply(yamlDict([
      ['name', room as string], ['capacity', s.capacity], ['checkin-timeout', s.checkinTimeout],
      ['participant-timeout', s.participantTimeout], ['grace', s.grace], ['rate-limit', s.rateLimit],
      ['paused', s.paused], ['lottery-time-left', Math.ceil(s.lotteryMsLeft / 1000)], ['configured', s.configured],
      ['participants', s.participants], ['tickets', s.tickets], ['waiting', s.waiting], ['open-places', s.openPlaces],
      ['admitted-total', s.admittedTotal], ['dropouts-total', s.dropoutsTotal], ['left-total', s.leftTotal],
      ['participant-timeouts-total', s.participantTimeoutsTotal], ['tickets-used-total', s.ticketsUsedTotal],
      ['tickets-expired-total', s.ticketsExpiredTotal], ['admission-rate', s.admissionRate],
      ['last-in-line-eta', s.lastInLineEtaSeconds],
    ])));
  },
  async 'list-rooms'(c) {
    c.send(okReply(yamlList(await c.sidecar.rooms.list())));
  },
};
