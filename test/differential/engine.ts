/**
 * Differential engine: plays a scenario against two targets (a reference and a
 * subject), each freshly started, and compares what came back.
 */
import { Wire } from '../helpers/wire.js';
import { deliberateById } from './deliberate.js';
import type { Scenario, Step, Template } from './dsl.js';
import { compareNorm, esc, IdMap, normaliseReply, type Dialect, type NormReply, type RawReply } from './normalise.js';

export interface TargetInstance { port: number; stop(): Promise<void>; }

export interface Target {
  name: string;
  /** Which beanstalkd version's wire format the target follows. */
  dialect: Dialect;
  /** Starts a fresh instance (global counters at zero, ids from 1). */
  start(): Promise<TargetInstance>;
}

/** What happened at one step on one target. */
export type Outcome =
  | { kind: 'none' }
  | { kind: 'replies'; replies: NormReply[]; error?: string }
  | { kind: 'silent'; got: string }
  | { kind: 'closed'; closed: boolean; got: string }
  | { kind: 'skipped' };

export interface EndState { conn: string; leftover: string; closedByServer: boolean; }

export interface Transcript {
  target: string;
  outcomes: Outcome[];
  /** index of the step that broke the run (timeout, unexpected close...), if any */
  abortedAt?: number;
  end: EndState[];
  /** Problems not tied to a reply (start failure, unresolvable placeholder...). */
  notes: string[];
}

export interface Divergence {
  scenario: string;
  where: string;
  step: string;
  kind: 'reply' | 'protocol' | 'declared' | 'desync' | 'unread-bytes' | 'error';
  message: string;
  /** target name -> escaped replies / state */
  replies: Record<string, string>;
}

/** A step where a deliberate divergence was exercised (not a failure). */
export interface DeliberateHit {
  scenario: string;
  where: string;
  divergence: string;
  replies: Record<string, string>;
}

export interface ScenarioResult {
  scenario: string;
  divergences: Divergence[];
  deliberate: DeliberateHit[];
  transcripts: Transcript[];
  ms: number;
}

export interface RunOptions {
  /** Milliseconds to let a fresh target settle before the first step (default 30). */
  settleMs?: number;
  /** How long the end-of-scenario check waits for stray bytes (default 100). */
  endCheckMs?: number;
  /** Pause after a client-side close/halfclose so the server sees it (default 50). */
  closeSettleMs?: number;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Reads one reply: a line, plus <bytes>+2 when it is RESERVED/FOUND/OK. */
async function readReply(w: Wire, timeoutMs: number): Promise<RawReply> {
  const line = await w.line(timeoutMs);
  const m = /^(?:RESERVED \d+|FOUND \d+|OK) (\d+)$/.exec(line);
  if (!m) return { line };
  return { line, chunk: await w.bytes(Number(m[1]) + 2, timeoutMs) };
}

/** The bytes a Wire has buffered but nobody read (Wire keeps them private). */
function pending(w: Wire): Buffer {
  return (w as unknown as { buf: Buffer }).buf;
}

async function drain(w: Wire): Promise<string> {
  const n = pending(w).length;
  return n ? (await w.bytes(n, 0)).toString('latin1') : '';
}

function render(t: Template, ids: IdMap, notes: string[]): string {
  return t.map((p) => {
    if (typeof p === 'string') return p;
    const real = ids.resolve(p.id);
    if (real !== undefined) return real;
    notes.push(`{id:${p.id}} used but this target reported fewer ids; sent 4294967295000 instead`);
    return '4294967295000';
  }).join('');
}

/**
 * Runs the steps on one target instance. `expectDeclared` makes reading steps
 * that carry a `~` declaration read as many replies as declared (the subject
 * side of a deliberate divergence) instead of the step's own count.
 */
export async function runOn(target: Target, inst: TargetInstance, scenario: Scenario, expectDeclared: boolean, opts: RunOptions = {}): Promise<Transcript> {
  const conns = new Map<string, Wire>();
  const closedByUs = new Set<string>();
  const ids = new IdMap();
  const tr: Transcript = { target: target.name, outcomes: [], end: [], notes: [] };
  const conn = async (name: string): Promise<Wire> => {
    let w = conns.get(name);
    if (!w || closedByUs.has(name)) {
      w = await Wire.connect(inst.port);
      conns.set(name, w);
      closedByUs.delete(name);
    }
    return w;
  };
  const steps = scenario.steps;
  try {
    for (let i = 0; i < steps.length; i++) {
      const step: Step = steps[i]!;
      let out: Outcome = { kind: 'none' };
      switch (step.kind) {
        case 'send': {
          const w = await conn(step.conn);
          w.send(Buffer.from(render(step.data, ids, tr.notes), 'latin1'));
          break;
        }
        case 'recv': {
          const w = await conn(step.conn);
          const count = expectDeclared && step.declared ? step.declared.replies.length : step.count;
          const replies: NormReply[] = [];
          let error: string | undefined;
          for (let k = 0; k < count; k++) {
            try {
              replies.push(normaliseReply(await readReply(w, step.timeoutMs), target.dialect, ids));
            } catch (e) {
              const have = esc(pending(w));
              error = `${w.closed ? 'connection closed by server' : `no complete reply within ${step.timeoutMs} ms`} while reading reply ${k + 1}/${count}${have ? `; partial: "${have}"` : ''}`;
              break;
            }
          }
          out = error === undefined ? { kind: 'replies', replies } : { kind: 'replies', replies, error };
          break;
        }
        case 'sleep':
          await sleep(step.ms);
          break;
        case 'silent': {
          const w = await conn(step.conn);
          await sleep(step.ms);
          const got = await drain(w);
          out = { kind: 'silent', got: got + (w.closed ? '[closed by server]' : '') };
          break;
        }
        case 'close': {
          const w = conns.get(step.conn);
          if (w && !closedByUs.has(step.conn)) { w.close(); closedByUs.add(step.conn); await sleep(opts.closeSettleMs ?? 50); }
          break;
        }
        case 'halfclose': {
          const w = await conn(step.conn);
          w.socket.end();
          await sleep(opts.closeSettleMs ?? 50);
          break;
        }
        case 'expect-closed': {
          const w = await conn(step.conn);
          let closed = true;
          try { await w.waitClosed(step.timeoutMs); } catch { closed = false; }
          out = { kind: 'closed', closed, got: await drain(w) };
          closedByUs.add(step.conn);
          w.close();
          break;
        }
      }
      tr.outcomes.push(out);
      if ((out.kind === 'replies' && out.error !== undefined) || (out.kind === 'silent' && out.got !== '') || (out.kind === 'closed' && !out.closed)) {
        tr.abortedAt = i;
        break;
      }
    }
    if (tr.abortedAt === undefined) {
      await sleep(opts.endCheckMs ?? 100);
      for (const [name, w] of conns) {
        if (closedByUs.has(name)) continue;
        tr.end.push({ conn: name, leftover: await drain(w), closedByServer: w.closed });
      }
    }
  } catch (e) {
    tr.notes.push(`engine error: ${(e as Error).message}`);
    tr.abortedAt ??= tr.outcomes.length;
  } finally {
    for (const w of conns.values()) w.close();
  }
  while (tr.outcomes.length < steps.length) tr.outcomes.push({ kind: 'skipped' });
  return tr;
}

function showReplies(o: Outcome | undefined): string {
  if (!o) return '(nothing)';
  switch (o.kind) {
    case 'none': return '(no output expected)';
    case 'skipped': return '(not run: the run stopped earlier)';
    case 'replies': return o.replies.map((r) => `"${esc(r.raw)}"`).join(' + ') + (o.error ? `${o.replies.length ? ' + ' : ''}<${o.error}>` : '') || '(no replies)';
    case 'silent': return o.got === '' ? '(silent)' : `received "${esc(o.got)}"`;
    case 'closed': return o.closed ? `(closed by server${o.got ? `, after "${esc(o.got)}"` : ''})` : `(still open${o.got ? `, received "${esc(o.got)}"` : ''})`;
  }
}

/** Shortens very long displays (big bodies) but keeps both ends. */
export function clip(s: string, max = 600): string {
  return s.length <= max ? s : `${s.slice(0, 400)}…[${s.length - 550} chars]…${s.slice(-150)}`;
}

function showNorm(o: Outcome | undefined): string {
  return o && o.kind === 'replies' ? o.replies.map((r) => `"${esc(r.text)}"`).join(' + ') : '';
}

/** Compares the transcripts of a reference and a subject. */
export function compareTranscripts(scenario: Scenario, ref: Transcript, sub: Transcript, refT: Target, subT: Target): { divergences: Divergence[]; deliberate: DeliberateHit[] } {
  const divergences: Divergence[] = [];
  const deliberate: DeliberateHit[] = [];
  const dialectsDiffer = refT.dialect !== subT.dialect;
  const add = (step: Step | undefined, kind: Divergence['kind'], message: string, replies: Record<string, string>) => {
    divergences.push({
      scenario: scenario.name,
      where: step ? `${step.src.file}:${step.src.line}` : `${scenario.src.file}:${scenario.src.line}`,
      step: step ? step.src.text.trim() : '(end of scenario)',
      kind, message, replies,
    });
  };
  for (const t of [ref, sub]) for (const n of t.notes) add(undefined, 'error', `${t.target}: ${n}`, {});
  let quotingHitRecorded = false;
  for (let i = 0; i < scenario.steps.length; i++) {
    const step = scenario.steps[i]!;
    const a = ref.outcomes[i];
    const b = sub.outcomes[i];
    const both = () => ({ [ref.target]: showReplies(a), [sub.target]: showReplies(b) });
    if (!a || !b) break;
    if (a.kind === 'skipped' || b.kind === 'skipped') break;
    if (step.kind === 'recv' && a.kind === 'replies' && b.kind === 'replies') {
      for (const [t, o] of [[ref, a], [sub, b]] as const) {
        for (const r of o.replies) for (const p of r.problems) add(step, 'protocol', `${t.target}: ${p}`, { [t.target]: `"${esc(r.raw)}"` });
      }
      if (!quotingHitRecorded && dialectsDiffer) {
        const q = [...a.replies, ...b.replies].flatMap((r) => r.quotedFields);
        if (q.length) {
          quotingHitRecorded = true;
          deliberate.push({ scenario: scenario.name, where: `${step.src.file}:${step.src.line}`, divergence: 'yaml-quoting', replies: { fields: q.join(', ') } });
        }
      }
      if (step.declared && dialectsDiffer) {
        const d = deliberateById(step.declared.divergence);
        const got = b.replies.map((r) => r.text);
        const want = step.declared.replies;
        const hit: DeliberateHit = { scenario: scenario.name, where: `${step.src.file}:${step.src.line}`, divergence: d?.id ?? step.declared.divergence, replies: both() };
        deliberate.push(hit);
        if (b.error !== undefined || got.length !== want.length || got.some((g, k) => g !== want[k])) {
          add(step, 'declared', `${sub.target} must answer as declared for deliberate divergence "${step.declared.divergence}": ${want.map((w) => `"${esc(w)}"`).join(' + ')}`, { ...both(), [`${sub.target} (normalised)`]: showNorm(b) });
          if (b.error !== undefined) break;
        }
        if (a.error !== undefined) { add(step, 'desync', `${ref.target} failed on a declared step`, both()); break; }
        continue;
      }
      let stop = false;
      const n = Math.max(a.replies.length, b.replies.length);
      for (let k = 0; k < n; k++) {
        const ra = a.replies[k];
        const rb = b.replies[k];
        if (!ra || !rb) break;
        const why = compareNorm(ra, rb);
        if (why) {
          add(step, 'reply', `reply ${k + 1}: ${why}`, {
            [ref.target]: `"${esc(ra.raw)}"`, [sub.target]: `"${esc(rb.raw)}"`,
            ...(ra.text !== ra.raw || rb.text !== rb.raw ? { [`${ref.target} (normalised)`]: `"${esc(ra.text)}"`, [`${sub.target} (normalised)`]: `"${esc(rb.text)}"` } : {}),
          });
        }
      }
      if (a.error !== undefined || b.error !== undefined || a.replies.length !== b.replies.length) {
        add(step, 'desync', a.error !== undefined && b.error !== undefined ? 'both targets failed this step (scenario bug?)' : 'one target did not deliver the replies', both());
        stop = true;
      }
      if (stop) break;
      continue;
    }
    if (a.kind !== b.kind) { add(step, 'desync', 'different kinds of outcome', both()); break; }
    if (a.kind === 'silent' && b.kind === 'silent') {
      if (a.got !== '' || b.got !== '') { add(step, 'desync', 'data arrived where silence was expected', both()); break; }
    }
    if (a.kind === 'closed' && b.kind === 'closed') {
      if (!a.closed || !b.closed || a.got !== b.got) { add(step, 'desync', 'connection should have been closed by the server (with nothing unread)', both()); break; }
    }
    if (ref.abortedAt === i || sub.abortedAt === i) {
      if (!divergences.some((d) => d.where === `${step.src.file}:${step.src.line}`)) add(step, 'desync', 'a target stopped here', both());
      break;
    }
  }
  if (ref.abortedAt === undefined && sub.abortedAt === undefined) {
    for (const t of [ref, sub]) {
      for (const e of t.end) {
        if (e.leftover !== '') add(undefined, 'unread-bytes', `${t.target}: connection ${e.conn} has unread bytes at the end`, { [t.target]: `"${esc(e.leftover)}"` });
      }
    }
    const closedA = ref.end.filter((e) => e.closedByServer).map((e) => e.conn).join(',');
    const closedB = sub.end.filter((e) => e.closedByServer).map((e) => e.conn).join(',');
    if (closedA !== closedB) add(undefined, 'desync', 'connections closed by the server differ', { [ref.target]: closedA || '(none)', [sub.target]: closedB || '(none)' });
  }
  return { divergences, deliberate };
}

/** Runs one scenario on fresh instances of both targets (concurrently). */
export async function runScenario(scenario: Scenario, ref: Target, sub: Target, opts: RunOptions = {}): Promise<ScenarioResult> {
  const t0 = Date.now();
  const dialectsDiffer = ref.dialect !== sub.dialect;
  const started = await Promise.allSettled([ref.start(), sub.start()]);
  const insts = started.map((s) => (s.status === 'fulfilled' ? s.value : undefined));
  try {
    const failed = started.map((s, k) => (s.status === 'rejected' ? `${[ref, sub][k]!.name} did not start: ${(s.reason as Error)?.message ?? s.reason}` : '')).filter(Boolean);
    if (failed.length) {
      return {
        scenario: scenario.name, deliberate: [], transcripts: [], ms: Date.now() - t0,
        divergences: failed.map((m) => ({ scenario: scenario.name, where: `${scenario.src.file}:${scenario.src.line}`, step: '(start)', kind: 'error' as const, message: m, replies: {} })),
      };
    }
    await sleep(opts.settleMs ?? 30);
    const [tr, ts] = await Promise.all([
      runOn(ref, insts[0]!, scenario, false, opts),
      runOn(sub, insts[1]!, scenario, dialectsDiffer, opts),
    ]);
    const { divergences, deliberate } = compareTranscripts(scenario, tr, ts, ref, sub);
    return { scenario: scenario.name, divergences, deliberate, transcripts: [tr, ts], ms: Date.now() - t0 };
  } finally {
    await Promise.allSettled(insts.map((i) => i?.stop()));
  }
}

export function formatDivergence(d: Divergence): string {
  const lines = [`✗ [${d.scenario}] ${d.where}  ${d.step}`, `    ${d.kind}: ${d.message}`];
  for (const [k, v] of Object.entries(d.replies)) lines.push(`    ${k.padEnd(24)} ${clip(v, 3000)}`);
  return lines.join('\n');
}

/** Full step-by-step transcript of a scenario (DIFF_VERBOSE=1). */
export function formatTranscripts(scenario: Scenario, r: ScenarioResult): string {
  const out = [`=== ${scenario.name}  (${scenario.src.file}:${scenario.src.line}, ${r.ms} ms)`];
  scenario.steps.forEach((s, i) => {
    const outs = r.transcripts.map((t) => [t.target, t.outcomes[i]] as const);
    const sameLineAsNext = scenario.steps[i + 1]?.src === s.src;
    if (!sameLineAsNext) out.push(`  ${s.src.text.trim()}`);
    if (outs.every(([, o]) => !o || o.kind === 'none')) return;
    for (const [name, o] of outs) out.push(`      ${name.padEnd(12)} ${clip(showReplies(o))}`);
  });
  return out.join('\n');
}

export interface Summary { scenarios: number; divergences: Divergence[]; deliberate: DeliberateHit[]; ms: number; }

export function summarise(results: ScenarioResult[]): Summary {
  return {
    scenarios: results.length,
    divergences: results.flatMap((r) => r.divergences),
    deliberate: results.flatMap((r) => r.deliberate),
    ms: results.reduce((s, r) => s + r.ms, 0),
  };
}

export function formatSummary(s: Summary, ref: string, sub: string): string {
  const byId = new Map<string, number>();
  for (const h of s.deliberate) byId.set(h.divergence, (byId.get(h.divergence) ?? 0) + 1);
  const hits = [...byId].map(([id, n]) => `${id} x${n}`).join(', ');
  const lines = [`differential ${ref} vs ${sub}: ${s.scenarios} scenarios, ${s.divergences.length} divergences, ${(s.ms / 1000).toFixed(1)} s`];
  lines.push(`  deliberate divergences exercised (not failures): ${hits || 'none'}`);
  const failing = new Set(s.divergences.map((d) => d.scenario));
  if (failing.size) lines.push(`  failing scenarios (${failing.size}): ${[...failing].join(' | ')}`);
  return lines.join('\n');
}

/** Runs all scenarios one after another. */
export async function runAll(scenarios: Scenario[], ref: Target, sub: Target, opts: RunOptions = {}): Promise<ScenarioResult[]> {
  const results: ScenarioResult[] = [];
  for (const s of scenarios) results.push(await runScenario(s, ref, sub, opts));
  return results;
}
