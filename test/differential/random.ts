/**
 * Seeded random scenarios for the differential suite (random.test.ts).
 *
 * `generateScenario(seed)` turns a seed into a scenario written in the ordinary
 * scenario language (dsl.ts), so that a failing one can be pasted into a
 * `scenarios/*.txt` file as it is. Generation is deterministic: a tiny PRNG
 * (mulberry32) and nothing else (no clock, no Math.random).
 *
 * What makes a generated scenario safe to compare:
 *  - the number of replies of every step is known from its bytes alone (only
 *    `put` lines and `quit` are special, and the generator knows which put lines
 *    parse: see the 'bad-put', 'too-big' and 'crlf' cases of `invalid`); nothing
 *    ever blocks (the only reserve is `reserve-with-timeout 0`);
 *  - nothing depends on time: ttr >= 600 (no DEADLINE_SOON, no expiry), delays
 *    are 0 or >= 3600 and pairwise >= 10 s apart (no ties in the delay order),
 *    pauses are 0 (= unpause now) or >= 3600;
 *  - the deliberate divergences are only ever *declared*, and only as the very
 *    last step (the two servers' states differ afterwards): `LIST-TUBE-USED` or
 *    `USE x` in another case (case-insensitive-commands; the expected reply
 *    comes from the model's used tube, which is exact), a
 *    `reserve-with-timeout` argument that 1.12 reads as 0 (reserve-timeout-parse),
 *    and a waiting-room command on a fresh room (room-commands).
 *
 * A small model of the server (jobs, states, tubes, watch lists, pauses) is kept
 * only to draw mostly-meaningful arguments (release a job this connection holds,
 * kick a buried one...). It is not an oracle: if it guesses wrong, the command is
 * simply less interesting; the replies are always compared between the servers.
 * The one exception is the used tube of each connection, which the declared
 * `LIST-TUBE-USED` step relies on; it only changes with `use` and `close`.
 */
import { parseScenarios, type Scenario } from './dsl.js';

// ---------------------------------------------------------------- PRNG

/** mulberry32: a 32-bit seeded PRNG (public domain), floats in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class Rng {
  private readonly f: () => number;
  constructor(seed: number) {
    // decorrelate neighbouring seeds (1, 2, 3...) before the first draw
    this.f = mulberry32(Math.imul(seed ^ 0x5bd1e995, 0x9e3779b1) ^ (seed >>> 16));
  }
  float(): number { return this.f(); }
  /** Integer in [lo, hi] (inclusive). */
  int(lo: number, hi: number): number { return lo + Math.floor(this.f() * (hi - lo + 1)); }
  chance(p: number): boolean { return this.f() < p; }
  pick<T>(xs: readonly T[]): T {
    if (xs.length === 0) throw new Error('pick from an empty list');
    return xs[Math.floor(this.f() * xs.length)]!;
  }
  /** Picks by weight: [[weight, value], ...]. */
  weighted<T>(entries: ReadonlyArray<readonly [number, T]>): T {
    const total = entries.reduce((s, [w]) => s + w, 0);
    let x = this.f() * total;
    for (const [w, v] of entries) {
      if (x < w) return v;
      x -= w;
    }
    return entries[entries.length - 1]![1];
  }
}

// ---------------------------------------------------------------- DSL text

/** Bytes of a step: latin1 text, a job-id placeholder, or a `{rep:UNIT:N}`. */
export type Part = string | { id: number } | { rep: string; n: number };

/** Escapes latin1 text for the scenario language. */
export function escapeDsl(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const ch = s[i]!;
    const c = ch.charCodeAt(0);
    if (ch === '\\') out += '\\\\';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (c === 0) out += '\\0';
    else if (ch === '{') out += '\\{';
    else if (c < 0x20 || c > 0x7e) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return out;
}

export function renderParts(parts: readonly Part[]): string {
  let s = parts.map((p) => {
    if (typeof p === 'string') return escapeDsl(p);
    if ('id' in p) return `{id:${p.id}}`;
    if (p.rep.includes('}')) throw new Error('a {rep:} unit cannot contain "}"');
    return `{rep:${escapeDsl(p.rep)}:${p.n}}`;
  }).join('');
  // the parser strips trailing whitespace: spell trailing spaces \s
  const m = / +$/.exec(s);
  if (m) s = s.slice(0, m.index) + '\\s'.repeat(m[0].length);
  return s;
}

// ---------------------------------------------------------------- model

type JobState = 'ready' | 'delayed' | 'reserved' | 'buried';

interface MJob {
  /** placeholder number ({id:N}) */
  ph: number;
  /** the server's id (ids consumed by EXPECTED_CRLF included) */
  real: number;
  tube: string;
  state: JobState;
  pri: number;
  holder?: string;
  /** delayed-queue order (deadline), buried-list order */
  delayKey: number;
  buryKey: number;
}

interface MConn { used: string; watched: string[]; }

class Model {
  readonly jobs = new Map<number, MJob>();
  /** ids reported in INSERTED replies (= highest placeholder) */
  nPh = 0;
  /** ids the server has handed out (INSERTED + EXPECTED_CRLF) */
  nReal = 0;
  readonly conns = new Map<string, MConn>();
  readonly paused = new Set<string>();
  private buries = 0;
  /** advances once per step (keeps equal delays in put order) */
  clock = 0;

  conn(name: string): MConn {
    let c = this.conns.get(name);
    if (!c) { c = { used: 'default', watched: ['default'] }; this.conns.set(name, c); }
    return c;
  }

  tubes(): Set<string> {
    const s = new Set<string>(['default']);
    for (const c of this.conns.values()) { s.add(c.used); for (const w of c.watched) s.add(w); }
    for (const j of this.jobs.values()) s.add(j.tube);
    return s;
  }

  /** A tube nobody references is freed, and loses its pause. */
  gc(): void {
    const live = this.tubes();
    for (const t of [...this.paused]) if (!live.has(t)) this.paused.delete(t);
  }

  /** ph -> server id, also for deleted jobs */
  private readonly reals: number[] = [];
  realOf(ph: number): number { return this.reals[ph - 1] ?? 0; }

  byReal(real: number): MJob | undefined {
    for (const j of this.jobs.values()) if (j.real === real) return j;
    return undefined;
  }

  put(conn: string, pri: number, delay: number): void {
    const ph = ++this.nPh;
    const real = ++this.nReal;
    this.reals.push(real);
    this.jobs.set(ph, { ph, real, tube: this.conn(conn).used, state: delay > 0 ? 'delayed' : 'ready', pri, delayKey: delay + this.clock * 1e-3, buryKey: 0 });
  }

  expectedCrlf(): void { this.nReal++; }

  reserve(conn: string): void {
    const c = this.conn(conn);
    let best: MJob | undefined;
    for (const j of this.jobs.values()) {
      if (j.state !== 'ready' || !c.watched.includes(j.tube) || this.paused.has(j.tube)) continue;
      if (!best || j.pri < best.pri || (j.pri === best.pri && j.real < best.real)) best = j;
    }
    if (best) { best.state = 'reserved'; best.holder = conn; }
  }

  reserveJob(conn: string, j: MJob | undefined): void {
    if (j && j.state !== 'reserved') { j.state = 'reserved'; j.holder = conn; }
  }

  delete(conn: string, j: MJob | undefined): void {
    if (!j) return;
    if (j.state !== 'reserved' || j.holder === conn) { this.jobs.delete(j.ph); this.gc(); }
  }

  release(conn: string, j: MJob | undefined, pri: number, delay: number): void {
    if (!j || j.state !== 'reserved' || j.holder !== conn) return;
    j.pri = pri;
    j.holder = undefined;
    if (delay > 0) { j.state = 'delayed'; j.delayKey = delay + this.clock * 1e-3; } else j.state = 'ready';
  }

  bury(conn: string, j: MJob | undefined, pri: number): void {
    if (!j || j.state !== 'reserved' || j.holder !== conn) return;
    j.pri = pri;
    j.holder = undefined;
    j.state = 'buried';
    j.buryKey = ++this.buries;
  }

  kick(conn: string, bound: number): void {
    const tube = this.conn(conn).used;
    const inTube = [...this.jobs.values()].filter((j) => j.tube === tube);
    const buried = inTube.filter((j) => j.state === 'buried').sort((x, y) => x.buryKey - y.buryKey);
    const pool = buried.length ? buried : inTube.filter((j) => j.state === 'delayed').sort((x, y) => x.delayKey - y.delayKey || x.real - y.real);
    for (const j of pool.slice(0, bound)) j.state = 'ready';
  }

  kickJob(j: MJob | undefined): void {
    if (j && (j.state === 'buried' || j.state === 'delayed')) j.state = 'ready';
  }

  use(conn: string, tube: string): void { this.conn(conn).used = tube; this.gc(); }

  watch(conn: string, tube: string): void {
    const c = this.conn(conn);
    if (!c.watched.includes(tube)) c.watched.push(tube);
  }

  ignore(conn: string, tube: string): void {
    const c = this.conn(conn);
    if (c.watched.length === 1 && c.watched[0] === tube) return; // NOT_IGNORED
    c.watched = c.watched.filter((t) => t !== tube);
    this.gc();
  }

  pause(tube: string, delay: number): void {
    if (!this.tubes().has(tube)) return; // NOT_FOUND
    if (delay > 0) this.paused.add(tube); else this.paused.delete(tube);
  }

  /** The client closed the connection: its reservations go back to ready. */
  close(conn: string): void {
    for (const j of this.jobs.values()) if (j.state === 'reserved' && j.holder === conn) { j.state = 'ready'; j.holder = undefined; }
    this.conns.delete(conn);
    this.gc();
  }
}

// ---------------------------------------------------------------- generator

/** One command (or several, or a put with its body) and how many replies it gets. */
interface Unit { parts: Part[]; replies: number; }

const GOOD_TUBES = ['default', 'default', 'a', 'b', 'tube-1', 'x_y.z', 'Foo', 'q$(1)+;/'];
const LONG_TUBE = `L${'o'.repeat(198)}g`; // 200 chars: the longest legal name
const BAD_TUBES = [
  '-foo', 'foo:bar', 'foo*', 'foo@x', '"foo"', 'f\xc3\xb6o', 'foo\tbar', 'foo,bar', 'foo#', 'foo~',
  'foo!', 'foo%', 'foo=', 'foo&', 'foo bar', ' foo', 'foo ', '', 'x'.repeat(201), 'fo\0o', 'a\nb', '{x}',
];
const TTRS = [600, 600, 1000, 3600, 86400, 4294967295];
const U64_MAX = '18446744073709551615';

/** Lines that are answered with exactly one reply whatever the state, and change nothing. */
const JUNK_LINES = [
  '', 'foo', 'puts 0 0 1 1', 'deletex 1', 'list-tube', 'peekx 1', 'xyzzy', 'help', 'version', 'reserved',
  'use', 'put', 'delete', 'peek', 'kick', 'touch', 'watch', 'ignore', 'release', 'bury', 'kick-job', 'pause-tube',
  'reserve ', 'reservex', 'reserve-with-timeout', 'reserve-job', 'reserve-jobx', 'reserve-job ',
  'statsx', 'stats ', 'stats-job', 'stats-tube', 'stats-tubex', 'stats-job ', 'stats-tube ',
  'peek-readyX', 'peek-ready ', 'peek-delayedX', 'peek-buriedX', 'peek-buried ',
  'list-tubesX', 'list-tube-usedX', 'list-tubes-watchedX', 'list-tubes ', 'list-tube-used ',
  'stats\0', '\0stats', 'list-tube-used\0', 'peek \0', 'list-tubes\nstats', 'use foo\nbar',
  'delete\t1', 'peek\t1', ' list-tube-used', '\tstats', '\x80\xff', 'kick 1\0',
];

/** Harmless one-reply commands used where the stream must go on (EXPECTED_CRLF rests, stray bodies). */
const TAIL_LINES = ['', 'x', 'zz', 'tats', 'hello', 'stats', 'list-tube-used', 'list-tubes', 'peek-ready', 'list-tubes-watched'];

export interface GeneratedScenario {
  seed: number;
  name: string;
  /** The scenario in the scenario language (paste it into a scenarios/*.txt file). */
  text: string;
  scenario: Scenario;
}

export interface GenOptions {
  /** Steps per scenario (default 10..40). */
  minSteps?: number;
  maxSteps?: number;
  /**
   * Ids are 1, 2, 3... (one shard): a job put earlier in the same write may be
   * named by its id. With several shards they are not (the suites see them by
   * put order, test/helpers/topology.ts, which needs the put's reply first):
   * false names only jobs whose INSERTED came back before the step.
   */
  predictableIds?: boolean;
}

class Generator {
  private readonly r: Rng;
  private readonly m = new Model();
  private readonly lines: string[] = [];
  private readonly usedDelays = new Set<number>();
  /** placeholders usable in the current step (ids reported before it was sent) */
  private knownPh = 0;
  readonly conns: string[];

  constructor(readonly seed: number, private readonly opts: GenOptions) {
    this.r = new Rng(seed);
    this.conns = ['a', 'b', 'c'].slice(0, this.r.int(1, 3));
  }

  generate(): string[] {
    const n = this.r.int(this.opts.minSteps ?? 10, this.opts.maxSteps ?? 40);
    for (let i = 0; i < n; i++) {
      this.m.clock = i;
      this.knownPh = this.m.nPh;
      const conn = this.r.weighted(this.conns.map((c, k) => [k === 0 ? 3 : 2, c] as const));
      const last = i === n - 1;
      if (last && this.r.chance(0.12)) { this.quit(conn); break; }
      if (last && this.r.chance(0.06)) { this.declaredReserveTimeout(conn); break; }
      if (last && this.r.chance(0.06)) { this.declaredCase(conn); break; }
      if (last && this.r.chance(0.05)) { this.declaredRoom(conn); break; }
      this.step(conn);
    }
    return this.lines;
  }

  // ---- emitting

  private emit(conn: string, u: Unit): void {
    const body = renderParts(u.parts);
    const count = u.replies === 1 ? '' : String(u.replies);
    this.lines.push(`${conn}:${count}${body === '' ? '' : ` ${body}`}`);
  }

  private step(conn: string): void {
    const kind = this.r.weighted<() => void>([
      [78, () => this.emit(conn, this.valid(conn))],
      [15, () => this.emit(conn, this.invalid(conn))],
      [4, () => this.emit(conn, this.pipeline(conn))],
      [this.conns.length > 1 ? 1.5 : 0.5, () => { this.lines.push(`${conn} close`); this.m.close(conn); }],
    ]);
    kind();
  }

  private quit(conn: string): void {
    const word = this.r.pick(['quit', 'quit', 'quitxyz', 'quit ']);
    if (this.r.chance(0.7)) {
      this.lines.push(`${conn}> ${renderParts([word])}`);
    } else {
      // quit at the end of a pipeline: the commands before it are answered, anything after it is not
      const before = this.pipeline(conn);
      const after = this.r.pick(['', 'stats\r\n', 'put 0 0 600 1\r\nx\r\n', 'list-tube-used\r\nlist-tubes\r\n']);
      this.lines.push(`${conn}>> ${renderParts([...before.parts, `\r\n${word}\r\n${after}`])}`);
      this.lines.push(`${conn}< ${before.replies}`);
    }
    this.lines.push(`${conn} expect-closed`);
    this.m.close(conn);
  }

  /**
   * Last step only: upper/mixed-case command word; redstalk answers it, 1.12 says
   * UNKNOWN_COMMAND (and redstalk counts it in cmd-list-tube-used, so the states differ afterwards).
   */
  private declaredCase(conn: string): void {
    if (this.r.chance(0.5)) {
      const word = this.r.pick(['LIST-TUBE-USED', 'List-Tube-Used', 'list-TUBE-used', 'LIST-tube-USED']);
      this.lines.push(`${conn}: ${word}`);
      this.lines.push(`~ case-insensitive-commands: USING ${escapeDsl(this.m.conn(conn).used)}`);
    } else {
      const t = this.goodTube();
      this.lines.push(`${conn}: ${this.r.pick(['USE', 'Use', 'uSe'])} ${escapeDsl(t)}`);
      this.lines.push(`~ case-insensitive-commands: USING ${escapeDsl(t)}`);
    }
  }

  /** Last step only: 1.12 reads these arguments as 0 (and may reserve a job), 1.13 says BAD_FORMAT. */
  private declaredReserveTimeout(conn: string): void {
    const arg = this.r.pick(['abc', '+0', '-0', ' ', 'x1']);
    this.lines.push(`${conn}: ${renderParts([`reserve-with-timeout ${arg}`])}`);
    this.lines.push('~ reserve-timeout-parse: BAD_FORMAT');
  }

  /**
   * Last step only: a waiting-room command, unknown to 1.12. Every scenario
   * starts with no rooms, and a room without room-config admits up to 100.
   */
  private declaredRoom(conn: string): void {
    const room = this.r.pick(['lobby', 'r-1', 'x'.repeat(200)]);
    const [command, reply] = this.r.pick([['enter', 'ENTERED'], ['check', 'READY'], ['leave', 'NOT_FOUND']] as const);
    this.lines.push(`${conn}: ${command} ${room} ${this.r.pick(['alice', 'u_1'])}`);
    this.lines.push(`~ room-commands: ${reply}`);
  }

  /** 2..4 (sometimes up to 12) units in one write. */
  private pipeline(conn: string): Unit {
    const n = this.r.chance(0.85) ? this.r.int(2, 4) : this.r.int(5, 12);
    const parts: Part[] = [];
    let replies = 0;
    for (let k = 0; k < n; k++) {
      const u = this.r.chance(0.75) ? this.valid(conn) : this.invalid(conn, true);
      if (k > 0) parts.push('\r\n');
      parts.push(...u.parts);
      replies += u.replies;
    }
    return { parts, replies };
  }

  // ---- argument helpers

  /** A number as the client writes it: now and then with leading zeros (legal: strtoumax). */
  private num(n: number): string {
    return this.r.chance(0.04) ? `${'0'.repeat(this.r.int(1, 12))}${n}` : String(n);
  }

  private pri(): number {
    return this.r.weighted<number>([
      [3, 0], [2, 1], [2, 1023], [2, 1024], [2, 1025], [1, 100], [1, 2000], [1, 512],
      [1, 4294967295], [1, 65536], [3, this.r.int(0, 2048)],
    ]);
  }

  /** A large delay, at least 10 s away from every delay used so far (no ties in the delayed order). */
  private bigDelay(): number {
    for (;;) {
      const base = this.r.pick([3600, 3600, 7200, 86400, 100000, 4294967295]);
      const d = base === 4294967295 ? base - 10 * this.r.int(0, 3) : base + 10 * this.r.int(0, 500);
      let clash = false;
      for (const u of this.usedDelays) if (Math.abs(u - d) < 10) clash = true;
      if (!clash) { this.usedDelays.add(d); return d; }
    }
  }

  private delay(pZero: number): number { return this.r.chance(pZero) ? 0 : this.bigDelay(); }

  private goodTube(): string {
    if (this.r.chance(0.02)) return LONG_TUBE;
    // prefer tubes that exist
    if (this.r.chance(0.4)) return this.r.pick([...this.m.tubes()].sort());
    return this.r.pick(GOOD_TUBES);
  }

  private body(): { parts: Part[]; len: number } {
    const kind = this.r.weighted<string>([[10, 'empty'], [70, 'short'], [14, 'medium'], [4, 'cmd'], [1, 'max'], [1, 'big']]);
    if (kind === 'max') return { parts: [{ rep: 'm', n: 65535 }], len: 65535 };
    if (kind === 'big') { const n = this.r.int(1000, 20000); return { parts: [{ rep: 'ab', n }], len: 2 * n }; }
    if (kind === 'cmd') { const s = this.r.pick(['abc\r\nstats', 'x\r\nput 0 0 600 1\r\ny', 'quit', '\r\n\r\n', 'reserve\r\n']); return { parts: [s], len: s.length }; }
    const len = kind === 'empty' ? 0 : kind === 'short' ? this.r.int(1, 10) : this.r.int(11, 120);
    const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789 ABC-_\r\n\0\t\xff\x80{}\\';
    let s = '';
    for (let i = 0; i < len; i++) s += this.r.chance(0.8) ? alphabet[this.r.int(0, 35)]! : alphabet[this.r.int(36, alphabet.length - 1)]!;
    return { parts: [s], len };
  }

  /**
   * A job id argument. `prefer` says which model jobs make the command meaningful.
   * Returns the parts and the model job it designates (if any).
   */
  private idArg(prefer: (j: MJob) => boolean): { parts: Part[]; job?: MJob } {
    const live = [...this.m.jobs.values()];
    const good = live.filter(prefer);
    const x = this.r.float();
    if (this.m.nPh > 0 && x < 0.85) {
      let ph: number;
      if (good.length && x < 0.65) ph = this.r.pick(good).ph;
      else if (live.length && x < 0.78) ph = this.r.pick(live).ph;
      else ph = this.r.int(1, this.m.nPh);
      const job = this.m.jobs.get(ph);
      // placeholders are resolved when the step is sent: a job put earlier in the
      // same write has no placeholder yet, so name it by its (predictable) id
      const zeros = this.r.chance(0.03) ? '0'.repeat(this.r.int(1, 22)) : '';
      if (ph > this.knownPh) {
        if (this.opts.predictableIds !== false) return { parts: [zeros + String(this.m.realOf(ph))], job };
        return { parts: [String(U64_MAX)] };
      }
      return { parts: zeros ? [zeros, { id: ph }] : [{ id: ph }], job };
    }
    const known = this.opts.predictableIds === false ? (this.knownPh > 0 ? this.m.realOf(this.knownPh) : 0) : this.m.nReal + 2;
    const lit = this.r.weighted<number | string>([[4, known > 0 ? this.r.int(1, known) : 0], [1, 0], [1, 999], [1, U64_MAX]]);
    return { parts: [String(lit)], job: typeof lit === 'number' ? this.m.byReal(lit) : undefined };
  }

  private held(conn: string): (j: MJob) => boolean { return (j) => j.state === 'reserved' && j.holder === conn; }

  // ---- valid commands

  /** A well-formed command (the server may still say NOT_FOUND etc.). */
  private valid(conn: string): Unit {
    const r = this.r;
    const m = this.m;
    const one = (...parts: Part[]): Unit => ({ parts, replies: 1 });
    const sp = () => (r.chance(0.05) ? '  ' : ' '); // extra spaces before numbers are legal
    // commands on a reserved job only make sense when this connection holds one
    const holds = [...m.jobs.values()].some(this.held(conn));
    const cmd = r.weighted<string>([
      [18, 'put'], [10, 'rwt'], [5, 'reserve-job'], [holds ? 9 : 4, 'delete'], [holds ? 14 : 2, 'release'], [holds ? 10 : 1.5, 'bury'], [holds ? 5 : 1, 'touch'],
      [4, 'kick'], [[...m.jobs.values()].some((j) => j.state === 'buried' || j.state === 'delayed') ? 6 : 1.5, 'kick-job'], [4, 'peek'], [2, 'peek-ready'], [2, 'peek-delayed'], [2, 'peek-buried'],
      [6, 'stats-job'], [4, 'stats-tube'], [2, 'stats'], [2, 'list-tubes'], [1, 'list-tube-used'], [2, 'list-tubes-watched'],
      [5, 'use'], [5, 'watch'], [4, 'ignore'], [4, 'pause-tube'],
    ]);
    switch (cmd) {
      case 'put': {
        const pri = this.pri();
        const delay = this.delay(0.8);
        const ttr = r.pick(TTRS);
        const b = this.body();
        m.put(conn, pri, delay);
        return one(`put${sp()}${this.num(pri)}${sp()}${this.num(delay)}${sp()}${this.num(ttr)}${sp()}${this.num(b.len)}\r\n`, ...b.parts);
      }
      case 'rwt': {
        const arg = r.weighted<string>([[20, '0'], [1, ' 0'], [1, '00'], [1, '000000000000'], [1, '0 junk'], [1, '0junk'], [1, '0 0']]);
        m.reserve(conn);
        return one(`reserve-with-timeout ${arg}`);
      }
      case 'reserve-job': {
        const a = this.idArg((j) => j.state !== 'reserved');
        m.reserveJob(conn, a.job);
        return one(`reserve-job${sp()}`, ...a.parts);
      }
      case 'delete': {
        const a = this.idArg((j) => j.state !== 'reserved' || j.holder === conn);
        m.delete(conn, a.job);
        return one(`delete${sp()}`, ...a.parts);
      }
      case 'release': {
        const a = this.idArg(this.held(conn));
        const pri = this.pri();
        const delay = this.delay(0.7);
        m.release(conn, a.job, pri, delay);
        return one(`release${sp()}`, ...a.parts, `${sp()}${this.num(pri)}${sp()}${this.num(delay)}`);
      }
      case 'bury': {
        const a = this.idArg(this.held(conn));
        const pri = this.pri();
        m.bury(conn, a.job, pri);
        return one(`bury${sp()}`, ...a.parts, `${sp()}${this.num(pri)}`);
      }
      case 'touch': {
        const a = this.idArg(this.held(conn));
        return one(`touch${sp()}`, ...a.parts);
      }
      case 'kick': {
        const bound = r.weighted<number>([[3, 1], [2, 2], [1, 0], [1, 3], [1, 5], [1, 100]]);
        m.kick(conn, bound);
        return one(`kick${sp()}${bound}`);
      }
      case 'kick-job': {
        const a = this.idArg((j) => j.state === 'buried' || j.state === 'delayed');
        m.kickJob(a.job);
        return one(`kick-job${sp()}`, ...a.parts);
      }
      case 'peek': return one(`peek${sp()}`, ...this.idArg(() => true).parts);
      case 'stats-job': return one(`stats-job${sp()}`, ...this.idArg(() => true).parts);
      case 'peek-ready': case 'peek-delayed': case 'peek-buried': case 'stats': case 'list-tubes':
      case 'list-tube-used': case 'list-tubes-watched':
        return one(cmd);
      case 'stats-tube': return one(`stats-tube ${this.goodTube()}`);
      case 'use': {
        const t = this.goodTube();
        m.use(conn, t);
        return one(`use ${t}`);
      }
      case 'watch': {
        const t = this.goodTube();
        m.watch(conn, t);
        return one(`watch ${t}`);
      }
      case 'ignore': {
        const w = m.conn(conn).watched;
        // ignoring the only watched tube is NOT_IGNORED: now and then, not most of the time
        const t = r.chance(w.length > 1 ? 0.7 : 0.25) ? r.pick(w) : this.goodTube();
        m.ignore(conn, t);
        return one(`ignore ${t}`);
      }
      default: { // pause-tube
        const paused = [...m.paused].sort();
        const unpause = paused.length > 0 && r.chance(0.45);
        const t = unpause ? r.pick(paused) : this.goodTube();
        const d = unpause || r.chance(0.15) ? 0 : r.pick([3600, 86400, 100000, 4294967295]);
        m.pause(t, d);
        // `pause-tube` needs no space before the name (the name parser skips spaces)
        const gap = r.weighted<string>([[20, ' '], [1, '  '], [1, '']]);
        let line = `pause-tube${gap}${t}${sp()}${this.num(d)}`;
        // a 223-byte line is the one length that swallows the next line (see 'long' below)
        if (line.length >= 223) line = `pause-tube ${t} ${d}`;
        return one(line);
      }
    }
  }

  // ---- invalid input

  /** Malformed input, with its exact reply count. Changes nothing unless stated. */
  private invalid(conn: string, inPipeline = false): Unit {
    const r = this.r;
    const one = (...parts: Part[]): Unit => ({ parts, replies: 1 });
    const kind = r.weighted<string>([
      [6, 'bad-id'], [3, 'bad-release'], [2, 'bad-bury'], [2, 'bad-pause'], [6, 'bad-put'], [inPipeline ? 1 : 3, 'too-big'],
      [4, 'crlf'], [4, 'bad-tube'], [5, 'junk'], [2, 'long'], [2, 'kick'], [1, 'random'],
    ]);
    switch (kind) {
      case 'bad-id': {
        const c = r.pick(['peek', 'delete', 'touch', 'kick-job', 'reserve-job', 'stats-job']);
        const id = this.idArg(() => true).parts;
        const form = r.weighted<Part[]>([
          [2, ['-1']], [2, ['+1']], [1, ['0x1']], [1, ['abc']], [2, ['18446744073709551616']], [1, ['99999999999999999999999']],
          [1, ['']], [1, ['-', ...id]], [2, [...id, ' ']], [2, [...id, 'x']], [2, [...id, ' 1']], [1, [...id, '\0']], [1, [' +', ...id]],
        ]);
        return one(`${c} `, ...form);
      }
      case 'bad-release': {
        const id = this.idArg(this.held(conn)).parts;
        const rest = r.pick(['', ' 0', ' 0 0 ', ' 0 0 0', ' 4294967296 0', ' 0 4294967296', ' -1 0', ' 0 +1', ' 0 0x', ' a b', ' 0\t0', ' 0 99999999999999999999']);
        return one('release ', ...id, rest);
      }
      case 'bad-bury': {
        const id = this.idArg(this.held(conn)).parts;
        return one('bury ', ...id, r.pick(['', ' ', ' 1 ', ' 4294967296', ' 1 1', ' -1', ' +5', ' x']));
      }
      case 'bad-pause': {
        const t = this.goodTube();
        return one(`pause-tube ${t}${r.pick(['', ' ', ' 1 ', ' -1', ' +1', ' 4294967296', ' 1 2', ' 1x', ' 0x0', ' 99999999999999999999'])}`);
      }
      case 'bad-put': {
        const p = this.pri();
        const line = r.pick([
          `put ${p} 0 600`, `put -1 0 600 1`, `put +1 0 600 1`, `put ${p} -5 600 1`, `put ${p} 0 600 -1`, `put ${p} 0 600 +1`,
          `put ${p} 0 600 1x`, `put ${p} 0 600 1 `, `put ${p} 0 600 1 2`, `put 4294967296 0 600 1`, `put ${p} 4294967296 600 1`,
          `put ${p} 0 4294967296 1`, `put ${p} 0 600 4294967296`, `put ${p} 0 600 99999999999999999999`, `put 0x1 0 600 1`,
          `put a b c d`, `put ${p} 0 600\0 1`, `put\0 0 0 600 1`, `put `, `put ${p}\t0 600 1`, `put ${p} 0 600 1\0`,
          `put\t0 0 600 1`, `PUTS 0 0 600 1`,
        ]);
        // the body is not read after a rejected put line: if the client sends it
        // anyway, it is parsed as a command (one more reply)
        if (r.chance(0.5)) return one(line);
        return { parts: [line, '\r\n', r.pick(TAIL_LINES)], replies: 2 };
      }
      case 'too-big': {
        // JOB_TOO_BIG: the server skips exactly <bytes>+2 bytes, whatever they are
        const unit = r.pick(['x', 'stats\r\n', 'put 0 0 600 1\r\nx\r\n', 'ab']);
        const reps = Math.ceil(r.int(65536, 70000) / unit.length);
        const n = reps * unit.length;
        const trailer = r.chance(0.2) ? ' junk' : ''; // size is checked before trailing garbage
        return one(`put ${this.pri()} ${this.delay(0.8)} 600 ${n}${trailer}\r\n`, { rep: unit, n: reps });
      }
      case 'crlf': {
        // EXPECTED_CRLF: <bytes>+2 are read, the last two are not CRLF; the job id is
        // used up and the rest of the line is parsed as a command
        const b = r.chance(0.9) ? this.body() : { parts: [{ rep: 'm', n: 65535 }] as Part[], len: 65535 };
        const rest = r.weighted<string>([
          [3, `${r.pick(['yz', 'XY', '\n\r', '\r\r', 'x\r', '\rx', '\n\n', '  ', '\0\0', '\r '])}${r.pick(TAIL_LINES)}`],
          [1, r.pick(['list-tube-used', 'stats', 'list-tubes', '\nstats', ' list-tube-used'])], // body followed directly by a command
        ]);
        this.m.expectedCrlf();
        return { parts: [`put ${this.pri()} ${this.delay(0.8)} 600 ${b.len}\r\n`, ...b.parts, rest], replies: 2 };
      }
      case 'bad-tube': {
        const c = r.pick(['use', 'watch', 'ignore', 'stats-tube', 'pause-tube']);
        let t = r.pick(BAD_TUBES);
        // pause-tube skips spaces before the name, so a leading space is not an error there
        if (c === 'pause-tube' && /^ |^$/.test(t)) t = '-x';
        return one(`${c} ${t}${c === 'pause-tube' ? ' 0' : ''}`);
      }
      case 'junk': return one(r.pick(JUNK_LINES));
      case 'long': {
        // 222 bytes + CRLF fit in the 224-byte line buffer; 224 or more do not.
        // (223 is a special case that swallows the next line: not generated.)
        const n = r.weighted<number>([[1, 222], [3, r.int(224, 400)], [1, 1000]]);
        return one(`${r.pick(['x', 'stats ', 'use '])}${'y'.repeat(n - 1)}`.slice(0, n));
      }
      case 'kick': {
        // kick's bound is read with strtoul: sign, spaces and trailing text are accepted
        const [arg, bound] = r.pick<readonly [string, number]>([
          ['5 junk', 5], ['-1', 4294967295], ['4294967296', 0], [' 3', 3], ['+3', 3], ['0x10', 0], ['abc', -1], ['', -1], ['-', -1],
          ['1x', 1], [U64_MAX, 4294967295],
        ]);
        if (bound >= 0) this.m.kick(conn, bound);
        return one(`kick ${arg}`);
      }
      default: {
        // a random printable line that starts with a character no command starts with
        let s = r.pick(['x', 'Z', '9', '#', '~']);
        const len = r.int(0, 30);
        for (let i = 0; i < len; i++) s += String.fromCharCode(r.int(0x20, 0x7e));
        return one(s);
      }
    }
  }
}

/** Generates the scenario of one seed (deterministic). */
export function generateScenario(seed: number, opts: GenOptions = {}): GeneratedScenario {
  const g = new Generator(seed, opts);
  const steps = g.generate();
  const name = `random seed ${seed}`;
  const text = [`# generated by test/differential/random.ts (seed ${seed}, ${g.conns.length} connection${g.conns.length > 1 ? 's' : ''})`, `=== ${name}`, ...steps, ''].join('\n');
  const parsed = parseScenarios(text, `random:${seed}`);
  if (parsed.length !== 1) throw new Error(`seed ${seed}: generated text parses into ${parsed.length} scenarios`);
  return { seed, name, text, scenario: parsed[0]! };
}

/** Parses "1-300", "5,9,1000-1200" into a sorted list of seeds. */
export function parseSeeds(spec: string): number[] {
  const out = new Set<number>();
  for (const piece of spec.split(',').map((s) => s.trim()).filter(Boolean)) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(piece);
    if (!m) throw new Error(`bad seed spec "${piece}" (want e.g. 1-300 or 5,9,1000-1200)`);
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    if (hi < lo) throw new Error(`bad seed range "${piece}"`);
    for (let s = lo; s <= hi; s++) out.add(s);
  }
  return [...out].sort((x, y) => x - y);
}

// ---------------------------------------------------------------- shrinking

/**
 * Splits scenario text into the header (comments, `===` line) and groups of lines
 * that must stay together: a step with its `~` declarations, a `quit` with the
 * `expect-closed` after it.
 */
function splitGroups(text: string): { header: string[]; groups: string[][] } {
  const header: string[] = [];
  const groups: string[][] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (groups.length === 0 && (line.startsWith('#') || line.startsWith('==='))) { header.push(line); continue; }
    const prev = groups[groups.length - 1];
    if (prev && (line.startsWith('~') || / expect-closed$/.test(line))) prev.push(line);
    else groups.push([line]);
  }
  return { header, groups };
}

/**
 * Greedy reduction of a failing scenario (DIFF_SHRINK=1): drops chunks of steps,
 * then single steps, as long as `stillFails` says the same divergence remains.
 * Placeholders are left as they are, so `stillFails` must reject runs in which a
 * placeholder no longer resolves. At most `maxRuns` calls.
 */
export async function shrinkScenario(text: string, stillFails: (text: string) => Promise<boolean>, maxRuns = 250): Promise<{ text: string; runs: number }> {
  const { header, groups } = splitGroups(text);
  const join = (gs: string[][]) => [...header, ...gs.flat(), ''].join('\n');
  let cur = groups;
  let runs = 0;
  for (let chunk = Math.max(1, Math.floor(cur.length / 2)); chunk >= 1; chunk = chunk === 1 ? 0 : Math.max(1, Math.floor(chunk / 2))) {
    let progress = true;
    while (progress && runs < maxRuns) {
      progress = false;
      for (let i = cur.length - chunk; i >= 0 && runs < maxRuns; i--) {
        const cand = [...cur.slice(0, i), ...cur.slice(i + chunk)];
        if (cand.length === 0) continue;
        runs++;
        if (await stillFails(join(cand))) { cur = cand; progress = true; i = Math.min(i, cur.length - chunk + 1); }
      }
      if (chunk > 1) break; // bigger chunks: one pass each
    }
  }
  return { text: join(cur), runs };
}
