import { describe, expect, it } from 'vitest';
import { TubeRates } from '../../src/admin/rates.js';

describe('tube rates', () => {
  it('are the counts\' difference over the oldest reading of the last minute, none before a second reading', () => {
    const r = new TubeRates();
    expect(r.read('t', 100, 50, 0)).toBeNull();
    expect(r.read('t', 101, 50, 500)).toBeNull(); // too soon after the first
    expect(r.read('t', 120, 60, 10_000)).toEqual({ put: 2, deleted: 1, overSeconds: 10 });
    expect(r.read('t', 220, 160, 20_000)).toEqual({ put: 6, deleted: 5.5, overSeconds: 20 });
    // A minute on, the first readings are dropped: the rate covers the last minute at most.
    expect(r.read('t', 820, 760, 75_000)).toEqual({ put: (820 - 220) / 55, deleted: (760 - 160) / 55, overSeconds: 55 });
  });

  it('never go negative (a tube removed and made again counts from 0)', () => {
    const r = new TubeRates();
    r.read('t', 100, 100, 0);
    expect(r.read('t', 3, 1, 5000)).toEqual({ put: 0, deleted: 0, overSeconds: 5 });
  });
});
