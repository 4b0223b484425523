// The fault suite's checker on made-up histories: what counts as held twice,
// as a TTR that ran out, and when Redis' outages excuse one.
import { describe, expect, it } from 'vitest';
import { account, holds, Ledger, longestOutside, ttrLapses, type Delivery } from '../faults/ledger.js';
import { promises, type RunResult } from '../faults/load.js';

const TTR = 20;

function delivery(marker: string, at: number, endedAt: number | undefined, outcome: Delivery['deleteOutcome'], worker: number): Delivery {
  return { marker, id: 7, at, worker, via: 'A', deleteOutcome: outcome, deleteReplies: [], endedAt };
}

function ledgerOf(...deliveries: Delivery[]): Ledger {
  const ledger = new Ledger();
  ledger.attempt({ marker: 'm', producer: 0, seq: 0, via: 'A', sentAt: 0, doneAt: 1, outcome: { kind: 'acked', id: 7 } });
  for (const d of deliveries) ledger.deliver(d);
  return ledger;
}

function run(ledger: Ledger, jobTimeouts: number): RunResult {
  const acc = account('t', ledger, TTR);
  const { lostMarkers: _, ...rest } = acc;
  return { report: { ...rest, recoverMs: 1, leftInQueue: 0, notes: [], lostList: [] }, jobTimeouts, ledger, faultStart: 0, faultEnd: 1 };
}

const ttrPromise = (checks: Array<[boolean, string]>) => checks.find(([, what]) => what.includes('TTR'))!;

describe('longestOutside', () => {
  it('is the whole span with no intervals, and the gaps between overlapping ones', () => {
    expect(longestOutside([], 0, 100)).toBe(100);
    expect(longestOutside([{ from: 10, to: 30 }, { from: 20, to: 40 }, { from: 70, to: 80 }], 0, 100)).toBe(30);
    expect(longestOutside([{ from: -5, to: 95 }], 0, 100)).toBe(5);
    expect(longestOutside([{ from: 50, to: Infinity }], 0, 100)).toBe(50);
    expect(longestOutside([{ from: 0, to: 100 }], 0, 100)).toBe(0);
  });
});

describe('holds', () => {
  it('flags a second delivery before the first hold ended, not one after', () => {
    const early = holds(ledgerOf(delivery('m', 1000, 2000, 'conn-lost', 1), delivery('m', 1990, 2100, 'deleted', 2)), TTR);
    expect(early.doubles.map((d) => d.overlapMs)).toEqual([10]);
    const after = holds(ledgerOf(delivery('m', 1000, 2000, 'conn-lost', 1), delivery('m', 2001, 2100, 'deleted', 2)), TTR);
    expect(after.doubles).toEqual([]);
    expect(after.comebackMs).toEqual([1]);
  });
});

describe('a TTR that ran out', () => {
  const lapsed = () => ledgerOf(delivery('m', 1000, 1500, 'conn-lost', 1), delivery('m', 21_100, 21_200, 'deleted', 2));

  it('is a redelivery at least the TTR after the one before, which was not deleted', () => {
    expect(ttrLapses(lapsed(), TTR).map((l) => l.prev.worker)).toEqual([1]);
    expect(ttrLapses(ledgerOf(delivery('m', 1000, 1500, 'conn-lost', 1), delivery('m', 2000, 2100, 'deleted', 2)), TTR)).toEqual([]);
  });

  it('breaks the promise unless excused, and job-timeouts beyond the excused ones break it too', () => {
    expect(ttrPromise(promises(run(lapsed(), 1), TTR))[0]).toBe(false);
    expect(ttrPromise(promises(run(lapsed(), 1), TTR, () => true))[0]).toBe(true);
    expect(ttrPromise(promises(run(lapsed(), 2), TTR, () => true))[0]).toBe(false);
    expect(ttrPromise(promises(run(lapsed(), 1), TTR, () => false))[0]).toBe(false);
    expect(ttrPromise(promises(run(ledgerOf(delivery('m', 1000, 1100, 'deleted', 1)), 0), TTR))[0]).toBe(true);
  });
});
