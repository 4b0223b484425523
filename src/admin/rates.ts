// Each tube's put and delete rates, from its counts (total jobs, deletes) as
// the admin API reads them: every read of a tube's counts is kept a while,
// and the rate is the difference over the oldest kept reading. The history
// sampler reads every tube every slot (history.ts), so a rate is never older
// than that; before a second reading it is null.

/** Readings older than this are dropped: a rate covers at most the last minute. */
const WINDOW_MS = 60_000;
/** Readings closer than this to the newest do not make a rate (too short to say much). */
const MIN_SPAN_MS = 1_000;
/** Tubes remembered (the oldest read is forgotten first). */
const MAX_TUBES = 20_000;

interface Reading { at: number; total: number; deleted: number }

export interface Rates { put: number; deleted: number; overSeconds: number }

export class TubeRates {
  private readonly readings = new Map<string, Reading[]>();

  /** A tube's counts as just read; its rates over the kept readings, or null. */
  read(tube: string, total: number, deleted: number, at = Date.now()): Rates | null {
    let list = this.readings.get(tube);
    if (list) this.readings.delete(tube); // re-inserted: the Map's order is then the order of last reads
    else {
      list = [];
      if (this.readings.size >= MAX_TUBES) this.readings.delete(this.readings.keys().next().value!);
    }
    while (list.length > 0 && at - list[0]!.at > WINDOW_MS) list.shift();
    const oldest = list[0];
    const last = list[list.length - 1];
    if (!last || at - last.at >= MIN_SPAN_MS) list.push({ at, total, deleted });
    this.readings.set(tube, list);
    if (!oldest || at - oldest.at < MIN_SPAN_MS) return null;
    const secs = (at - oldest.at) / 1000;
    // A tube removed and made again counts from 0: no negative rates.
    return { put: Math.max(0, (total - oldest.total) / secs), deleted: Math.max(0, (deleted - oldest.deleted) / secs), overSeconds: secs };
  }
}
