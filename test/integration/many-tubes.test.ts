// With 10,000 tubes, `stats` costs what it costs with ten: the totals of every
// state are kept in Redis as jobs move, not summed over the tubes per call.
import { describe, expect, it } from 'vitest';
import { sidecarPerTest } from '../helpers/fixtures.js';
import { yamlMap } from '../helpers/wire.js';

const ctx = sidecarPerTest();
const TUBES = 10_000;

describe(`${TUBES} tubes`, () => {
  it('stats takes a few milliseconds (median of 20; it took about 330 ms when it summed every tube)', async () => {
    const a = await ctx.dial();
    let batch = '';
    for (let i = 0; i < TUBES; i++) batch += `use t${i}\r\nput ${i % 2 ? 0 : 5000} 0 60 1\r\nx\r\n`;
    a.send(batch);
    for (let i = 0; i < 2 * TUBES; i++) await a.line(30_000);
    const times: number[] = [];
    let stats: Record<string, string> = {};
    for (let i = 0; i < 20; i++) {
      const t0 = performance.now();
      stats = yamlMap(await a.cmd('stats'));
      times.push(performance.now() - t0);
    }
    expect(stats).toMatchObject({ 'current-jobs-ready': String(TUBES), 'current-jobs-urgent': String(TUBES / 2), 'current-tubes': String(TUBES + 1) });
    const median = times.sort((x, y) => x - y)[10]!;
    process.stdout.write(`stats with ${TUBES} tubes: median ${median.toFixed(1)} ms\n`);
    // Generous for a noisy machine: the point is that it no longer grows with the tubes.
    expect(median).toBeLessThan(100);
  }, 90_000);
});
