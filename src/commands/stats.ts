// stats, stats-tube, stats-job: the typed stats model (svc.stats) rendered
// as beanstalkd's YAML documents (protocol/stats.json).
import { okReply, REPLY } from '../protocol/replies.js';
import { renderDocument } from '../protocol/stats.js';
import type { Handlers } from './session.js';

export const statsHandlers: Handlers<'stats' | 'stats-tube' | 'stats-job'> = {
  async stats(s, _args, svc) {
    s.answer(okReply(renderDocument('stats', await svc.stats.server())));
  },
  async 'stats-tube'(s, [tube], svc) {
    const t = await svc.stats.tube(tube);
    s.answer(t ? okReply(renderDocument('stats-tube', t)) : REPLY.NOT_FOUND);
  },
  async 'stats-job'(s, [id], svc) {
    const j = await svc.stats.job(id);
    s.answer(j ? okReply(renderDocument('stats-job', j)) : REPLY.NOT_FOUND);
  },
};
