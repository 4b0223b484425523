// What a connection uses and watches (use, watch, ignore, list-*), pausing a
// tube, a tube's settings (tube-set), and quit.
import { line, okReply, REPLY } from '../protocol/replies.js';
import { isValidName, LIMITS } from '../protocol/spec.js';
import { yamlList } from '../protocol/yaml.js';
import type { Handlers } from './session.js';

type TubeCommand = 'use' | 'watch' | 'ignore' | 'list-tubes-watched' | 'list-tube-used' | 'list-tubes' | 'pause-tube' | 'tube-set' | 'quit';


/** Runs fn after p, or at once when there is nothing to wait for. */
function after(p: Promise<void> | undefined, fn: () => void): Promise<void> | void {
  return p ? p.then(fn) : fn();
}

export const tubeHandlers: Handlers<TubeCommand> = {
  use(s, [tube], svc) {
    if (tube === s.used) return s.answer(line(`USING ${tube}`));
    return after(svc.reference(tube, 'using', 1), () => {
      svc.reference(s.used, 'using', -1);
      s.setUsed(tube);
      s.answer(line(`USING ${tube}`));
    });
  },
  watch(s, [tube], svc) {
    if (s.watches(tube)) return s.answer(line(`WATCHING ${s.watched.length}`));
    return after(svc.reference(tube, 'watching', 1), () => {
      s.addWatched(tube);
      s.answer(line(`WATCHING ${s.watched.length}`));
    });
  },
  ignore(s, [tube], svc) {
    if (s.watches(tube)) {
      if (s.watched.length < 2) return s.answer(REPLY.NOT_IGNORED);
      s.removeWatched(tube);
      svc.reference(tube, 'watching', -1);
    }
    s.answer(line(`WATCHING ${s.watched.length}`));
  },
  'list-tubes-watched': (s) => s.answer(okReply(yamlList(s.watched))),
  'list-tube-used': (s) => s.answer(line(`USING ${s.used}`)),
  async 'list-tubes'(s, _args, svc) {
    s.answer(okReply(yamlList(await svc.jobs.listTubes())));
  },
  async 'pause-tube'(s, [tube, delay], svc) {
    // Checked here, not by the parser: beanstalkd counts the command first.
    if (!isValidName(tube)) return s.answer(REPLY.BAD_FORMAT);
    s.answer((await svc.jobs.pauseTube(tube, delay)) ? REPLY.PAUSED : REPLY.NOT_FOUND);
  },
  async 'tube-set'(s, [tube, setting, value], svc) {
    // A tube keeps the times of its last second of reserves (includes/limits.lua): bounded.
    if (setting === 'reserve-rate' && value > LIMITS.reserveRateMax) return s.answer(REPLY.BAD_FORMAT);
    await svc.jobs.tubeSet(tube, setting, value);
    s.answer(REPLY.OK);
  },
  quit: (s) => s.quit(),
};
