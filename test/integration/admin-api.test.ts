// The admin API on --http (/api/, protocol/admin-api.yaml) against a real
// Redis: listings by state in each state's order, paged by cursor; searches
// bounded and resumable; one job with its body; actions behind the token,
// refused read-only, cross-origin, or on a reserved job; bulk actions only
// after their confirmation; rooms.
import { execFile } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AdminClient, putBuried, putMany } from '../helpers/admin-http.js';
import { parseExposition, valueOf } from '../helpers/prometheus.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { ROOT, startRedstalk, type TestSidecar } from '../helpers/redstalk.js';
import { WirePool } from '../helpers/wire.js';

import pkg from '../../package.json' with { type: 'json' };

const TOKEN = 'sekrit-admin';

/** `redstalk jobs ...` in a child process (asynchronously: the sidecar it asks runs in this one). */
const jobsCli = (...args: string[]) => new Promise<{ status: number; stdout: string; stderr: string }>((resolve) => {
  execFile(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/cli.ts'), 'jobs', ...args], { cwd: ROOT },
    (err, stdout, stderr) => resolve({ status: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }));
});

describe('the admin API', () => {
  let redis: TestRedis | undefined;
  let sidecar: TestSidecar | undefined;
  const wires = new WirePool();
  afterEach(async () => {
    wires.closeAll();
    await sidecar?.stop();
    await redis?.stop();
    redis = sidecar = undefined;
  });

  async function start(opts: { httpAdminToken?: string; authToken?: string; httpHosts?: string } = { httpAdminToken: TOKEN }) {
    redis = await startRedis();
    sidecar = await startRedstalk({ redisUrl: redis.url, http: '127.0.0.1:0', ...opts });
    const w = await wires.dial(sidecar.port, true);
    if (opts.authToken) expect(await w.cmd(`auth ${opts.authToken}`)).toBe('OK');
    return { w, api: new AdminClient(sidecar.server.httpAddress!, opts.httpAdminToken ?? opts.authToken ?? null), anon: new AdminClient(sidecar.server.httpAddress!) };
  }

  /** Every job of a state, page by page. */
  async function all(api: AdminClient, tube: string, state: string, limit: number) {
    const ids: string[] = [];
    let cursor = '';
    let pages = 0;
    do {
      const r = await api.get(`/api/tubes/${encodeURIComponent(tube)}/jobs?state=${state}&limit=${limit}&cursor=${encodeURIComponent(cursor)}`);
      expect(r.status).toBe(200);
      ids.push(...r.body.jobs.map((j: { id: string }) => j.id));
      cursor = r.body.next;
      pages++;
    } while (cursor !== '');
    return { ids, pages };
  }

  it('lists ready jobs in reserve order, a page at a time, each once, to the end', async () => {
    const { w, api } = await start();
    const low = await putMany(w, 'q/1', Array.from({ length: 120 }, (_, i) => `low ${i}`), { pri: 2000 });
    const high = await putMany(w, 'q/1', Array.from({ length: 130 }, (_, i) => `high ${i}`), { pri: 5 });
    const { ids, pages } = await all(api, 'q/1', 'ready', 100);
    expect(ids).toEqual([...high, ...low]);
    expect(pages).toBe(3);
    const first = await api.get('/api/tubes/q%2F1/jobs?limit=1');
    expect(first.body.jobs[0]).toMatchObject({ id: high[0], tube: 'q/1', state: 'ready', pri: 5, holder: '', preview: { text: 'high 0', bytes: 6 } });
    // What reserve takes first is what the listing shows first.
    expect(await w.cmd('watch q/1')).toBe('WATCHING 2');
    expect((await w.cmd('reserve-with-timeout 0')).split('\n')[0]).toBe(`RESERVED ${high[0]} 6`);
  });

  it('goes on after its cursor when the cursor\'s job has left meanwhile', async () => {
    const { w, api } = await start();
    const ids = await putMany(w, 'gone', Array.from({ length: 10 }, (_, i) => `j${i}`));
    const page = await api.get('/api/tubes/gone/jobs?limit=4');
    expect(page.body.jobs.map((j: { id: string }) => j.id)).toEqual(ids.slice(0, 4));
    expect(await w.cmd(`delete ${ids[3]}`)).toBe('DELETED');
    expect(await w.cmd(`delete ${ids[2]}`)).toBe('DELETED');
    const next = await api.get(`/api/tubes/gone/jobs?limit=4&cursor=${encodeURIComponent(page.body.next)}`);
    expect(next.body.jobs.map((j: { id: string }) => j.id)).toEqual(ids.slice(4, 8));
  });

  it('lists delayed jobs by due time, buried in bury order, reserved with their holder and time left', async () => {
    const { w, api } = await start();
    const [late] = await putMany(w, 'd', ['late'], { delay: 500 });
    const [soon] = await putMany(w, 'd', ['soon'], { delay: 100 });
    const [a, b, c] = await putMany(w, 'd', ['a', 'b', 'c'], { ttr: 30 });
    await putMany(w, 'other', ['elsewhere']);
    expect(await w.cmd('watch d')).toBe('WATCHING 2');
    expect(await w.cmd('ignore default')).toBe('WATCHING 1');
    for (const id of [a, b, c]) expect((await w.cmd('reserve-with-timeout 0')).split('\n')[0]).toBe(`RESERVED ${id} 1`);
    expect(await w.cmd(`bury ${b} 1`)).toBe('BURIED');
    expect(await w.cmd(`bury ${a} 1`)).toBe('BURIED');
    const other = await wires.dial(sidecar!.port, true);
    expect(await other.cmd('watch other')).toBe('WATCHING 2');
    expect((await other.cmd('reserve-with-timeout 0')).startsWith('RESERVED')).toBe(true);
    expect((await all(api, 'd', 'delayed', 10)).ids).toEqual([soon, late]);
    expect((await all(api, 'd', 'buried', 10)).ids).toEqual([b, a]);
    const reserved = await api.get('/api/tubes/d/jobs?state=reserved');
    expect(reserved.body.jobs).toHaveLength(1);
    expect(reserved.body.jobs[0]).toMatchObject({ id: c, state: 'reserved', ttr: 30 });
    expect(reserved.body.jobs[0].holder).toMatch(/^[0-9a-f]+:\d+$/);
    expect(reserved.body.jobs[0].timeLeft).toBeGreaterThanOrEqual(28);
    expect(reserved.body.next).toBe('');
  });

  it('finds one job among 10,000 by a body substring or by its id, within the scan bound, resumably', async () => {
    const { w, api } = await start();
    const bodies = Array.from({ length: 10_000 }, (_, i) => `order-${i} {"customer":${i % 97}}`);
    bodies[7321] = 'order-7321 {"customer":"needle-42"}';
    const ids = await putMany(w, 'orders', bodies);
    const found = await api.get('/api/tubes/orders/jobs?q=needle-42&limit=10');
    expect(found.body.jobs.map((j: { id: string }) => j.id)).toEqual([ids[7321]]);
    expect(found.body).toMatchObject({ next: '', scanned: 10_000 });
    // A bound stops the scan early and says where to go on.
    const part = await api.get('/api/tubes/orders/jobs?q=needle-42&scan=5000');
    expect(part.body).toMatchObject({ jobs: [], scanned: 5000 });
    expect(part.body.next).not.toBe('');
    const rest = await api.get(`/api/tubes/orders/jobs?q=needle-42&scan=5000&cursor=${encodeURIComponent(part.body.next)}`);
    expect(rest.body.jobs.map((j: { id: string }) => j.id)).toEqual([ids[7321]]);
    const [, beta] = await putMany(w, 'words', ['alpha', 'beta', 'gamma']);
    const byId = await api.get(`/api/tubes/words/jobs?q=${beta}`);
    expect(byId.body.jobs.map((j: { id: string }) => j.id)).toEqual([beta]);
  }, 60_000);

  it('shows one job with its stats and its whole body, as text when UTF-8 and always as base64', async () => {
    const { w, api } = await start();
    const [text, binary] = await putMany(w, 'bodies', ['<script>alert(1)</script>', Buffer.from([0xff, 0x00, 0xfe])], { pri: 7 });
    expect((await api.get(`/api/jobs/${text}`)).body).toMatchObject({
      id: text, tube: 'bodies', state: 'ready', pri: 7, reserves: 0,
      body: { bytes: 25, text: '<script>alert(1)</script>', base64: Buffer.from('<script>alert(1)</script>').toString('base64') },
    });
    expect((await api.get(`/api/jobs/${binary}`)).body.body).toEqual({ bytes: 3, text: null, base64: '/wD+' });
    expect(await api.get('/api/jobs/999999')).toMatchObject({ status: 404, body: { error: 'no job 999999' } });
    expect((await api.get('/api/jobs/abc')).status).toBe(400);
  });

  it('kicks a buried job so that a worker can reserve it over the protocol, and kicks n', async () => {
    const { w, api } = await start();
    const ids = await putBuried(w, 'k', ['one', 'two', 'three']);
    expect(await w.cmd('watch k')).toBe('WATCHING 2');
    expect(await api.post(`/api/jobs/${ids[1]}/kick`)).toMatchObject({ status: 200, body: { kicked: true } });
    expect(await api.post(`/api/jobs/${ids[1]}/kick`)).toMatchObject({ status: 409 });
    expect((await w.cmd('reserve-with-timeout 0')).split('\n')[0]).toBe(`RESERVED ${ids[1]} 3`);
    expect(await api.post('/api/tubes/k/kick', { n: 5 })).toMatchObject({ status: 200, body: { kicked: 2 } });
    expect((await api.get('/api/tubes/k')).body).toMatchObject({ name: 'k', ready: 2, reserved: 1, buried: 0 });
  });

  it('deletes a job that is not reserved, and refuses a reserved one', async () => {
    const { w, api } = await start();
    const [a, b] = await putMany(w, 'del', ['a', 'b']);
    expect(await w.cmd('watch del')).toBe('WATCHING 2');
    expect((await w.cmd('reserve-with-timeout 0')).split('\n')[0]).toBe(`RESERVED ${a} 1`);
    expect(await api.call('DELETE', `/api/jobs/${a}`)).toMatchObject({ status: 409 });
    expect(await api.call('DELETE', `/api/jobs/${b}`)).toMatchObject({ status: 200, body: { deleted: true } });
    expect(await w.cmd(`peek ${b}`)).toBe('NOT_FOUND');
    expect(await api.call('DELETE', `/api/jobs/${b}`)).toMatchObject({ status: 404 });
    expect(await w.cmd(`delete ${a}`)).toBe('DELETED');
  });

  it('pauses and resumes a tube', async () => {
    const { w, api } = await start();
    await putMany(w, 'p', ['x']);
    expect(await api.post('/api/tubes/p/pause', { seconds: 60 })).toMatchObject({ status: 200, body: { paused: true } });
    expect((await api.get('/api/tubes/p')).body).toMatchObject({ paused: true, pauseLeft: 59 });
    expect(await w.cmd('watch p')).toBe('WATCHING 2');
    expect(await w.cmd('reserve-with-timeout 0')).toBe('TIMED_OUT');
    expect(await api.post('/api/tubes/p/pause', { seconds: 0 })).toMatchObject({ status: 200, body: { paused: false } });
    expect(await w.cmd('reserve-with-timeout 0')).toMatch(/^RESERVED/);
    expect(await api.post('/api/tubes/none/pause', { seconds: 5 })).toMatchObject({ status: 404, body: { error: 'no tube none' } });
    expect(await api.post('/api/tubes/p/pause', { seconds: -1 })).toMatchObject({ status: 400 });
  });

  it('shows a tube\'s limits and its put-with counts', async () => {
    const { w, api } = await start();
    expect((await api.get('/api/tubes/default')).body).toMatchObject({ limits: { maxReserved: 0, reserveRate: 0, dedupWindow: 300 }, expired: 0, duplicatePuts: 0 });
    expect(await w.cmd('tube-set default max-reserved 3')).toBe('OK');
    expect(await w.cmd('tube-set default reserve-rate 40')).toBe('OK');
    expect(await w.cmd('put-with k 0 delete 0 0 60 1\r\na')).toMatch(/^INSERTED/);
    expect(await w.cmd('put-with k 0 delete 0 0 60 1\r\na')).toMatch(/^DUPLICATE/);
    expect((await api.get('/api/tubes/default')).body).toMatchObject({ limits: { maxReserved: 3, reserveRate: 40, dedupWindow: 300 }, duplicatePuts: 1 });
  });

  it('acts in bulk only with a confirmation for the same filter, on at most the count confirmed', async () => {
    const { w, api } = await start();
    const ids = await putMany(w, 'bulk', Array.from({ length: 30 }, (_, i) => (i % 3 === 0 ? `bad ${i}` : `good ${i}`)));
    const ask = await api.post('/api/tubes/bulk/bulk', { action: 'delete', state: 'ready', q: 'bad' });
    expect(ask.body).toMatchObject({ confirmed: false, count: 10, complete: true });
    // Another filter's confirmation, or a forged one, acts on nothing.
    expect(await api.post('/api/tubes/bulk/bulk', { action: 'delete', state: 'ready', q: 'good', confirm: ask.body.confirm })).toMatchObject({ status: 409 });
    expect(await api.post('/api/tubes/bulk/bulk', { action: 'delete', state: 'ready', q: 'bad', confirm: ask.body.confirm.replace(/\.10\./, '.30.') })).toMatchObject({ status: 409 });
    await putMany(w, 'bulk', ['bad later']); // selected now, but over the count confirmed
    expect((await api.post('/api/tubes/bulk/bulk', { action: 'delete', state: 'ready', q: 'bad', confirm: ask.body.confirm })).body).toEqual({ confirmed: true, done: 10 });
    expect((await api.get('/api/tubes/bulk')).body.ready).toBe(21);
    expect(await w.cmd(`peek ${ids[0]}`)).toBe('NOT_FOUND');
    expect(await api.post('/api/tubes/bulk/bulk', { action: 'kick', state: 'ready' })).toMatchObject({ status: 400 });
    expect(await api.post('/api/tubes/bulk/bulk', { action: 'delete', state: 'reserved' })).toMatchObject({ status: 400 });
  });

  it('kicks every buried job in bulk', async () => {
    const { w, api } = await start();
    await putBuried(w, 'bk', ['a', 'b', 'c']);
    const ask = await api.post('/api/tubes/bk/bulk', { action: 'kick', state: 'buried' });
    expect(ask.body.count).toBe(3);
    expect((await api.post('/api/tubes/bk/bulk', { action: 'kick', state: 'buried', confirm: ask.body.confirm })).body).toEqual({ confirmed: true, done: 3 });
    expect((await api.get('/api/tubes/bk')).body).toMatchObject({ ready: 3, buried: 0 });
  });

  it('is read-only without a token: the server refuses every change, and reads still work', async () => {
    const { w, api } = await start({});
    const [id] = await putMany(w, 'ro', ['x']);
    expect(await api.post('/api/tubes/ro/kick', { n: 1 })).toMatchObject({ status: 403, body: { error: expect.stringContaining('read-only') } });
    expect(await api.call('DELETE', `/api/jobs/${id}`)).toMatchObject({ status: 403 });
    expect((await api.get(`/api/jobs/${id}`)).status).toBe(200);
    expect(await w.cmd(`peek ${id}`)).toMatch(/^FOUND/);
  });

  it('wants the token in Authorization: Bearer, and refuses changes from another origin even with it', async () => {
    const { w, api, anon } = await start();
    const [id] = await putMany(w, 'auth', ['x']);
    expect(await anon.call('DELETE', `/api/jobs/${id}`)).toMatchObject({ status: 401 });
    expect(await anon.call('DELETE', `/api/jobs/${id}`, undefined, { authorization: 'Bearer wrong' })).toMatchObject({ status: 401 });
    expect(await anon.call('DELETE', `/api/jobs/${id}`, undefined, { cookie: `token=${TOKEN}` })).toMatchObject({ status: 401 });
    expect(await api.call('DELETE', `/api/jobs/${id}`, undefined, { origin: 'http://evil.example' })).toMatchObject({ status: 403 });
    expect(await api.call('DELETE', `/api/jobs/${id}`, undefined, { 'sec-fetch-site': 'cross-site' })).toMatchObject({ status: 403 });
    expect(await api.call('DELETE', `/api/jobs/${id}`, undefined, { origin: `http://${api.address}` })).toMatchObject({ status: 200 });
  });

  it('answers the API and the page only under an IP address, localhost or a name of --http-hosts (DNS rebinding); the probes under any', async () => {
    const { api } = await start({ httpAdminToken: TOKEN, httpHosts: 'dash.internal,ops.example' });
    const as = (host: string, path: string) => new Promise<number>((resolve, reject) => {
      const [hostname, port] = api.address.split(':');
      http.get({ hostname, port: Number(port), path, headers: { host } }, (res) => { res.resume(); resolve(res.statusCode!); }).on('error', reject);
    });
    expect(await as('evil.example:80', '/api/overview')).toBe(403);
    expect(await as('evil.example', '/api/events')).toBe(403);
    expect(await as('evil.example', '/')).toBe(403);
    expect(await as('evil.example', '/metrics')).toBe(200);
    expect(await as('evil.example', '/healthz')).toBe(200);
    expect(await as('dash.internal:11301', '/api/overview')).toBe(200);
    expect(await as('OPS.example', '/api/overview')).toBe(200);
    expect(await as('localhost:11301', '/api/overview')).toBe(200);
    expect(await as('[::1]:11301', '/api/overview')).toBe(200);
  });

  it('takes the auth token as the admin token when no admin token is set', async () => {
    const { w, api } = await start({ authToken: 'proto-token' });
    const [id] = await putMany(w, 'at', ['x']);
    expect(await api.call('DELETE', `/api/jobs/${id}`)).toMatchObject({ status: 200 });
  });

  it('lists tubes filtered, sorted by name or a count, a page at a time', async () => {
    const { w, api } = await start();
    for (const [tube, n] of [['t-a', 3], ['t-b', 1], ['t-c', 2], ['x', 5]] as const) await putMany(w, tube, Array.from({ length: n }, () => 'j'));
    const byName = await api.get('/api/tubes?filter=t-&limit=2');
    expect(byName.body.total).toBe(3);
    expect(byName.body.tubes.map((t: { name: string }) => t.name)).toEqual(['t-a', 't-b']);
    const byReady = await api.get('/api/tubes?sort=ready&order=desc&offset=1&limit=2');
    expect(byReady.body.tubes.map((t: { name: string; ready: number }) => [t.name, t.ready])).toEqual([['t-a', 3], ['t-c', 2]]);
    expect((await api.get('/api/tubes/nope')).status).toBe(404);
    expect((await api.get('/api/tubes?sort=size')).status).toBe(400);
  });

  it('tells each tube\'s oldest ready job\'s age, over every priority, in the API and /metrics', async () => {
    const { w, api } = await start();
    await putMany(w, 'aged', ['old, low priority'], { pri: 5000 });
    await new Promise((r) => setTimeout(r, 300));
    await putMany(w, 'aged', ['new, urgent'], { pri: 0 });
    await putMany(w, 'fresh', ['x']);
    await putMany(w, 'later', ['x'], { delay: 60 });
    const aged = (await api.get('/api/tubes/aged')).body.oldestReadyAge;
    expect(aged).toBeGreaterThanOrEqual(0.3);
    expect(aged).toBeLessThan(5);
    expect((await api.get('/api/tubes/fresh')).body.oldestReadyAge).toBeLessThan(0.3);
    expect((await api.get('/api/tubes/later')).body.oldestReadyAge).toBeNull();
    const sorted = await api.get('/api/tubes?sort=oldestReadyAge&order=desc');
    expect(sorted.body.tubes.map((t: { name: string }) => t.name).slice(0, 2)).toEqual(['aged', 'fresh']);
    const metrics = parseExposition(await (await fetch(`http://${api.address}/metrics`)).text());
    expect(valueOf(metrics, 'redstalk_tube_oldest_ready_age_seconds', { tube: 'aged' })).toBeGreaterThanOrEqual(0.3);
    expect(valueOf(metrics, 'redstalk_tube_oldest_ready_age_seconds', { tube: 'later' })).toBeUndefined();
  });

  it('shows every live sidecar with its counters, version and batch sizes', async () => {
    const { w, api } = await start();
    await putMany(w, 'o', ['a', 'b', 'c']);
    // Said every 5 s: the first time as the sidecar starts (no batch yet), then with the puts'.
    await expect.poll(async () => Number((await api.get('/api/overview')).body.sidecars[0]?.info['batch-calls'] ?? 0), { timeout: 8000, interval: 200 }).toBeGreaterThan(0);
    const { body } = await api.get('/api/overview');
    expect(body.totals).toMatchObject({ ready: 3, tubes: 2 });
    expect(body.sidecars).toHaveLength(1);
    expect(body.sidecars[0].info).toMatchObject({ version: pkg.version });
    expect(Number(body.sidecars[0].info['batch-ops-mean'])).toBeGreaterThan(0);
    expect(body.sidecars[0].counters).toMatchObject({ 'current-connections': '1', 'cmd-put': '3' });
    expect(Object.keys(body.sidecars[0].counters).some((k) => k.includes(':'))).toBe(false); // no per-tube fields
  });

  it('shows rooms with their state, and pauses and resumes admission', async () => {
    const { w, api } = await start();
    expect(await w.cmd('enter hall alice')).toBe('ENTERED');
    expect((await api.get('/api/rooms')).body).toEqual([expect.objectContaining({ name: 'hall', participants: 1, paused: false })]);
    expect(await api.post('/api/rooms/hall/pause', { paused: true })).toMatchObject({ status: 200, body: { paused: true } });
    expect((await api.get('/api/rooms')).body[0].paused).toBe(true);
    expect(await api.post('/api/rooms/hall/pause', { paused: false })).toMatchObject({ status: 200, body: { paused: false } });
    expect(await api.post('/api/rooms/none/pause', { paused: true })).toMatchObject({ status: 404 });
    expect(await api.post('/api/rooms/hall/pause', { paused: 'maybe' })).toMatchObject({ status: 400 });
  });

  it('answers what it does not take with 400, 404 and 405', async () => {
    const { api } = await start();
    expect((await api.get('/api/tubes/default/jobs?state=lost')).status).toBe(400);
    expect((await api.get('/api/tubes/default/jobs?limit=0')).status).toBe(400);
    expect((await api.get('/api/nothing')).status).toBe(404);
    expect(await api.call('PUT', '/api/tubes/default/kick')).toMatchObject({ status: 405 });
    const bad = await fetch(`http://${api.address}/api/tubes/default/kick`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body: '{not json' });
    expect(bad.status).toBe(400);
    expect((await api.get('/api/tubes/%E0%A4%A')).status).toBe(400);
    // Names the protocol would refuse: the API refuses them too, before any store call.
    for (const name of ['-dash', 'a'.repeat(201), 'sp%20ace', 'star*', '%C3%A9t%C3%A9']) {
      expect((await api.get(`/api/tubes/${name}`)).status, name).toBe(400);
      expect((await api.post(`/api/tubes/${name}/kick`, { n: 1 })).status, name).toBe(400);
    }
    expect((await api.post('/api/rooms/bad%20room/pause', { paused: 'true' })).status).toBe(400);
    expect((await api.get('/api/overview')).body.totals).toMatchObject({ tubes: 1 });
  });

  it('serves `redstalk jobs list` and `redstalk jobs search` from the same queries, page by page', async () => {
    const { w, api } = await start();
    const ids = await putMany(w, 'cli', ['first\tline', 'second', 'third needle', Buffer.from([0xff])]);
    const list = await jobsCli('list', 'cli', '--http', api.address, '--limit', '2');
    expect(list.status).toBe(0);
    expect(list.stdout).toMatch(new RegExp(`^${ids[0]} +ready +1024 +\\d+ +0 +0 +- +first\\\\tline$`, 'm'));
    const cursor = /--cursor '([^']+)'/.exec(list.stdout)![1]!;
    const all = await jobsCli('list', 'cli', '--http', api.address, '--limit', '2', '--all', '--json');
    const pages = all.stdout.trim().split('\n').map((l) => JSON.parse(l) as { jobs: Array<{ id: string }>; next: string });
    expect(pages.flatMap((p) => p.jobs.map((j) => j.id))).toEqual(ids);
    expect(pages.at(-1)!.next).toBe('');
    expect((await jobsCli('list', 'cli', '--http', api.address, '--cursor', cursor)).stdout).toContain('base64:/w==');
    const found = await jobsCli('search', 'cli', 'needle', '--http', api.address, '--json');
    expect((JSON.parse(found.stdout) as { jobs: Array<{ id: string }> }).jobs.map((j) => j.id)).toEqual([ids[2]]);
    const bad = await jobsCli('list', 'cli', '--http', api.address, '--state', 'gone');
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('400 state must be one of');
  });
});
