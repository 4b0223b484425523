// Job commands (beanstalkd prot.c): put, peek*, reserve*, delete, release,
// bury, kick*, touch. put, delete, release, bury and touch of a job this
// connection holds go into the cross-connection batch (store/batcher.ts);
// their replies are made by the completions at the end of this file.
import { jobReply, line, REPLY } from '../protocol/replies.js';
import { COMMANDS } from '../protocol/spec.js';
import { delayRun, jobOps, type Completion, type JobOp, type Stored } from '../store/ops.js';
import type { PeekState } from '../store/job-store.js';
import type { BatchRules, Handlers, Services, Session } from './session.js';

/** The most pipelined `reserve-with-timeout 0` answered by one store call. */
const MAX_RUN = 100;
/** Its stats counter, as the spec declares it (the dispatcher counts the first of a run). */
const RESERVE_TIMEOUT_COUNTER = COMMANDS.find((c) => c.name === 'reserve-with-timeout')!.counter!;

type JobCommand = 'put' | 'put-with' | 'peek' | 'peek-ready' | 'peek-delayed' | 'peek-buried' | 'reserve-with-timeout'
  | 'reserve-job' | 'reserve' | 'delete' | 'release' | 'bury' | 'kick' | 'kick-job' | 'touch' | 'reserve-many';

export const jobHandlers: Handlers<JobCommand> = {
  put(s, [pri, delay, ttr], svc, body) {
    // Like beanstalkd, a put that fails here has already used up a job id.
    if (!body) return s.submit(jobOps.burnId(s, expectedCrlf, s.used));
    if (svc.draining()) return s.submit(jobOps.burnId(s, refusedDraining, s.used));
    // A ttr of 0 would expire at once; beanstalkd raises it to 1 second.
    s.submit(jobOps.put(s, inserted, s.used, pri, delay, Math.max(1, ttr), body, s.arrivedAt));
  },

  'put-with'(s, [key, expire, onExpiry, pri, delay, ttr], svc, body) {
    if (!body) return s.submit(jobOps.burnId(s, expectedCrlf, s.used));
    if (svc.draining()) return s.submit(jobOps.burnId(s, refusedDraining, s.used));
    s.submit(jobOps.putWith(s, stored, s.used, key, expire, onExpiry === 'bury', pri, delay, Math.max(1, ttr), body, s.arrivedAt));
  },

  async peek(s, [id], svc) {
    const job = await svc.jobs.peekJob(id);
    s.answer(job ? jobReply('FOUND', job.id, job.body) : REPLY.NOT_FOUND);
  },
  'peek-ready': (s, _args, svc) => peekTube(s, svc, 'ready'),
  'peek-delayed': (s, _args, svc) => peekTube(s, svc, 'delayed'),
  'peek-buried': (s, _args, svc) => peekTube(s, svc, 'buried'),

  'reserve-with-timeout'(s, [timeout], svc) {
    // A pipelined run of these (a client draining fast) takes its jobs at once, where the store
    // sees all the watched tubes at once; elsewhere each goes on its own.
    if (timeout !== 0 || !svc.reservesAtOnce(s)) return svc.wait(s, timeout);
    const more = s.takeRepeats(MAX_RUN - 1);
    for (let i = 0; i < more; i++) svc.countCommand(RESERVE_TIMEOUT_COUNTER);
    return svc.wait(s, 0, { run: 1 + more });
  },
  async 'reserve-job'(s, [id], svc) {
    const tube = await tubeOf(s, svc, id);
    const job = tube === null ? null : await svc.jobs.reserveJob(s.owner, id, tube);
    if (!job) return s.answer(REPLY.NOT_FOUND);
    s.becomeWorker(); // beanstalkd counts a reserve-job worker only once it got a job
    s.deliver(job);
  },
  reserve: (s, _args, svc) => svc.wait(s, null),
  'reserve-many': (s, [count, timeout], svc) => svc.wait(s, timeout, { many: count }),

  delete(s, [id], svc) {
    const r = s.reserved.get(id);
    if (r) return s.submit(jobOps.delete(s, deleted, s.owner, id, r.tube));
    return deleteAnywhere(s, svc, id);
  },
  release(s, [id, pri, delay]) {
    const r = s.reserved.get(id);
    if (!r) return s.answer(REPLY.NOT_FOUND);
    s.submit(jobOps.release(s, released, s.owner, id, r.tube, pri, delay, s.arrivedAt));
  },
  bury(s, [id, pri]) {
    const r = s.reserved.get(id);
    if (!r) return s.answer(REPLY.NOT_FOUND);
    s.submit(jobOps.bury(s, buried, s.owner, id, r.tube, pri));
  },
  async kick(s, [bound], svc) {
    s.answer(line(`KICKED ${await svc.jobs.kick(s.used, bound)}`));
  },
  async 'kick-job'(s, [id], svc) {
    const tube = await tubeOf(s, svc, id);
    const ok = tube !== null && (await svc.jobs.kickJob(id, tube));
    s.answer(ok ? REPLY.KICKED : REPLY.NOT_FOUND);
  },
  touch(s, [id]) {
    const r = s.reserved.get(id);
    if (!r) return s.answer(REPLY.NOT_FOUND);
    s.submit(jobOps.touch(s, touched, s.owner, id, r.tube));
  },
};

const heldHere = (s: Session, [id]: [id: string, ...unknown[]]) => s.reserved.has(id);

/** The job commands that join the batch (a put's framing is checked by the dispatcher). */
export const jobBatchRules: BatchRules = {
  put: () => true,
  'put-with': () => true,
  delete: heldHere,
  release: heldHere,
  bury: heldHere,
  touch: heldHere,
};

/** A batched command's completion: the reply for its result, or the error it met, to its connection. */
function completion<R>(reply: (s: Session, op: JobOp<Session, R>, result: R) => Buffer): Completion<Session, R> {
  return (op, result, err) => op.ctx.settled(op, err ?? reply(op.ctx, op, result));
}

// Built once: a completion per op kind, so no closure is made per command.
const expectedCrlf = completion<string>(() => REPLY.EXPECTED_CRLF);
const refusedDraining = completion<string>(() => REPLY.DRAINING);

/** INSERTED, the promotion timer woken for the job's delay. */
function insertedReply(s: Session, op: JobOp<Session, unknown>, id: string): Buffer {
  if (op.delay > 0) s.dueIn(op.delay * 1000 - delayRun(op));
  return line(`INSERTED ${id}`);
}

const inserted = completion<string>(insertedReply);

const stored = completion<Stored>((s, op, { id, duplicate }) => {
  if (duplicate) return line(`DUPLICATE ${id}`);
  // The promotion timer wakes for the job's expiry too.
  if (op.expire > 0) s.dueIn(op.expire * 1000);
  return insertedReply(s, op, id);
});

const deleted = completion<boolean>((s, op, ok) => {
  if (!ok) return REPLY.NOT_FOUND;
  s.completed(op.id);
  return REPLY.DELETED;
});

const released = completion<boolean>((s, op, ok) => {
  s.forget(op.id);
  if (!ok) return REPLY.NOT_FOUND;
  if (op.delay > 0) s.dueIn(op.delay * 1000 - delayRun(op));
  return REPLY.RELEASED;
});

const buried = completion<boolean>((s, op, ok) => {
  s.forget(op.id);
  return ok ? REPLY.BURIED : REPLY.NOT_FOUND;
});

const touched = completion<number>((s, op, ttr) => {
  if (ttr === 0 || !s.reserved.has(op.id)) {
    s.forget(op.id);
    return REPLY.NOT_FOUND;
  }
  s.renew(op.id, ttr);
  return REPLY.TOUCHED;
});

/** delete of a job this connection does not hold: find its tube first (a job never changes tube). */
async function deleteAnywhere(s: Session, svc: Services, id: string): Promise<void> {
  const tube = await svc.jobs.jobTube(id);
  if (tube === null) return s.answer(REPLY.NOT_FOUND);
  s.submit(jobOps.delete(s, deleted, s.owner, id, tube));
}

/** A job's tube: known locally for this connection's reservations, else asked of the store. */
function tubeOf(s: Session, svc: Services, id: string): Promise<string | null> {
  const r = s.reserved.get(id);
  return r ? Promise.resolve(r.tube) : svc.jobs.jobTube(id);
}

async function peekTube(s: Session, svc: Services, state: PeekState): Promise<void> {
  const job = await svc.jobs.peekTube(s.used, state);
  s.answer(job ? jobReply('FOUND', job.id, job.body) : REPLY.NOT_FOUND);
}
