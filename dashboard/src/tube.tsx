// One tube: its counts (pushed live), its jobs by state a page at a time
// (the API's cursor), a search within it, actions, and a job's detail.
import { useEffect, useState } from 'preact/hooks';
import { del, duration, enc, get, post, useLive, type JobPage } from './api.js';
import { JobDetail } from './job.js';
import { Action, ErrorLine, Figure } from './ui.js';

const STATES = ['ready', 'delayed', 'reserved', 'buried'] as const;
const LIMIT = 50;

export function TubeView({ name }: { name: string }) {
  const live = useLive(name);
  const [state, setState] = useState<(typeof STATES)[number]>('ready');
  const [query, setQuery] = useState('');
  const [typed, setTyped] = useState('');
  const [cursors, setCursors] = useState<string[]>(['']);
  const [page, setPage] = useState<JobPage | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const [bulk, setBulk] = useState<{ action: 'kick' | 'delete'; count: number; complete: boolean; confirm: string } | null>(null);
  const [pauseFor, setPauseFor] = useState('60');
  const cursor = cursors[cursors.length - 1]!;
  const tube = live?.tube;
  const base = `api/tubes/${enc(name)}`;
  const load = () => {
    get<JobPage>(`${base}/jobs?state=${state}&limit=${LIMIT}&cursor=${enc(cursor)}&q=${enc(query)}`)
      .then((p) => { setPage(p); setError(null); }, (e: Error) => setError(e.message));
  };
  // Again whenever the pushed counts of the tube change (not its oldest job's age, which grows by itself).
  const moved = tube ? [tube.ready, tube.reserved, tube.delayed, tube.buried, tube.total, tube.deleted].join() : '';
  useEffect(load, [name, state, query, cursor, moved]);
  const restart = () => { setCursors(['']); setBulk(null); };
  const askBulk = (action: 'kick' | 'delete') => post<{ count: number; complete: boolean; confirm: string }>(`${base}/bulk`, { action, state, q: query })
    .then((r) => { setBulk({ action, ...r }); return r; });
  return (
    <div>
      <h2>tube <span class="mono">{name}</span></h2>
      {live && tube === null && <p>No such tube now (a tube exists while it holds jobs or someone uses it).</p>}
      {tube && (
        <div class="figures">
          <Figure label="ready" value={tube.ready} /><Figure label="urgent" value={tube.urgent} /><Figure label="reserved" value={tube.reserved} />
          <Figure label="delayed" value={tube.delayed} /><Figure label="buried" value={tube.buried} /><Figure label="total" value={tube.total} />
          <Figure label="oldest ready" value={tube.oldestReadyAge === null ? '-' : `${tube.oldestReadyAge.toFixed(1)}s`} />
          {tube.latency && (['wait', 'run'] as const).map((k) => (
            <Figure key={k} label={`${k} p50 / p99`} value={`${duration(tube.latency![k].p50)} / ${duration(tube.latency![k].p99)}`} />
          ))}
          <Figure label="paused" value={tube.paused ? `${tube.pauseLeft}s` : 'no'} />
          <Figure label="max reserved" value={tube.limits.maxReserved || '-'} />
          <Figure label="reserves / s" value={tube.limits.reserveRate || '-'} />
          {(tube.expired > 0 || tube.duplicatePuts > 0) && <Figure label="expired / duplicate puts" value={`${tube.expired} / ${tube.duplicatePuts}`} />}
        </div>
      )}
      <div class="bar">
        <Action label="kick 1" run={() => post(`${base}/kick`, { n: 1 })} />
        <Action label="kick 100" run={() => post(`${base}/kick`, { n: 100 })} />
        <input class="short" value={pauseFor} aria-label="pause seconds" onInput={(e) => setPauseFor((e.target as HTMLInputElement).value)} />
        <Action label="pause" run={() => post(`${base}/pause`, { seconds: Number(pauseFor) })} />
        <Action label="resume" run={() => post(`${base}/pause`, { seconds: 0 })} />
      </div>
      <div class="bar tabs" role="tablist">
        {STATES.map((s) => (
          <button key={s} role="tab" aria-selected={s === state} class={s === state ? 'selected' : ''} onClick={() => { setState(s); restart(); }}>
            {s}{tube ? ` (${tube[s]})` : ''}
          </button>
        ))}
      </div>
      <form class="bar" onSubmit={(e) => { e.preventDefault(); setQuery(typed); restart(); }}>
        <input type="search" placeholder="job id or text in the body" value={typed} aria-label="search jobs" onInput={(e) => setTyped((e.target as HTMLInputElement).value)} />
        <button type="submit">search</button>
        <span class="muted">{query ? `jobs whose id is “${query}” or whose body holds it` : ''}</span>
      </form>
      <div class="bar">
        {state !== 'reserved' && <Action label={`delete all ${query ? 'found' : state}…`} run={() => askBulk('delete')} />}
        {(state === 'buried' || state === 'delayed') && <Action label={`kick all ${query ? 'found' : state}…`} run={() => askBulk('kick')} />}
        {bulk && (
          <span class="confirm">
            {bulk.action} {bulk.count}{bulk.complete ? '' : '+'} jobs?
            <Action label={`confirm ${bulk.action}`} run={() => post(`${base}/bulk`, { action: bulk.action, state, q: query, confirm: bulk.confirm })} done={() => setBulk(null)} />
          </span>
        )}
      </div>
      <ErrorLine error={error} />
      {open && <JobDetail id={open} onClose={() => setOpen(null)} />}
      {page && (
        <div>
          <table class="jobs">
            <thead><tr><th>id</th><th>pri</th><th>age</th><th>{state === 'delayed' ? 'due in' : 'time left'}</th><th>reserves</th>{state === 'reserved' && <th>holder</th>}<th>body</th><th></th></tr></thead>
            <tbody>{page.jobs.map((j) => (
              <tr key={j.id} data-job={j.id}>
                <td><button class="link mono" onClick={() => setOpen(j.id)}>{j.id}</button></td>
                <td>{j.pri}</td><td>{j.age}s</td><td>{j.timeLeft}s</td><td>{j.reserves}</td>{state === 'reserved' && <td class="mono">{j.holder}</td>}
                <td class="preview">{j.preview.text ?? <em>binary, {j.preview.bytes}+ bytes</em>}</td>
                <td>
                  {(j.state === 'buried' || j.state === 'delayed') && <Action label="kick" run={() => post(`api/jobs/${j.id}/kick`)} />}
                  {j.state !== 'reserved' && <Action label="delete" run={() => del(`api/jobs/${j.id}`)} />}
                </td>
              </tr>
            ))}</tbody>
          </table>
          <div class="bar">
            <span class="muted">looked at {page.scanned} jobs{page.next ? '; there is more' : '; the end'}</span>
            <button disabled={cursors.length === 1} onClick={() => setCursors(cursors.slice(0, -1))}>previous</button>
            <button disabled={!page.next} onClick={() => setCursors([...cursors, page.next])}>{page.jobs.length < LIMIT && page.next ? 'search on' : 'next'}</button>
          </div>
        </div>
      )}
    </div>
  );
}
