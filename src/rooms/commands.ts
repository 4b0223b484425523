// The waiting-room commands (protocol/PROTOCOL.md, "Waiting rooms"), a peer
// of the job, tube and stats commands. Each turns its parsed arguments
// (names and bounds are checked by the parser, from protocol/commands.json)
// into one RoomStore call and a reply.
import type { Handlers } from '../commands/session.js';
import { line, okReply, REPLY } from '../protocol/replies.js';
import { renderDocument } from '../protocol/stats.js';
import { yamlList } from '../protocol/yaml.js';
import type { Standing } from '../store/room-store.js';

type RoomCommand = 'enter' | 'check' | 'leave' | 'room-config' | 'room-rate' | 'pause-room' | 'room-lottery' | 'stats-room' | 'list-rooms';

function standingReply(s: Standing, inside: Buffer): Buffer {
  return s.waiting ? line(`WAITING ${s.position} ${s.etaSeconds}`) : inside;
}

export const roomHandlers: Handlers<RoomCommand> = {
  async enter(s, [room, user], svc) {
    s.answer(standingReply(await svc.rooms.enter(room, user), REPLY.ENTERED));
  },
  async check(s, [room, user], svc) {
    s.answer(standingReply(await svc.rooms.check(room, user), REPLY.READY));
  },
  async leave(s, [room, user], svc) {
    s.answer((await svc.rooms.leave(room, user)) ? REPLY.LEFT : REPLY.NOT_FOUND);
  },
  async 'room-config'(s, [room, capacity, checkinTimeout, participantTimeout, grace], svc) {
    await svc.rooms.configure(room, { capacity, checkinTimeout, participantTimeout, grace });
    s.answer(REPLY.OK);
  },
  async 'room-rate'(s, [room, perMinute], svc) {
    await svc.rooms.limitRate(room, perMinute);
    s.answer(REPLY.OK);
  },
  async 'pause-room'(s, [room, paused], svc) {
    await svc.rooms.pause(room, paused === 1);
    s.answer(REPLY.OK);
  },
  async 'room-lottery'(s, [room, seconds], svc) {
    await svc.rooms.startLottery(room, seconds);
    s.answer(REPLY.OK);
  },
  async 'stats-room'(s, [room], svc) {
    const r = await svc.stats.room(room);
    s.answer(r ? okReply(renderDocument('stats-room', r)) : REPLY.NOT_FOUND);
  },
  async 'list-rooms'(s, _args, svc) {
    s.answer(okReply(yamlList(await svc.rooms.list())));
  },
};
