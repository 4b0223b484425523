// Every tube, filtered by name and sorted by any column on the server, a page
// at a time (10,000 tubes stay quick); refreshed when a push says jobs moved.
import { useEffect, useState } from 'preact/hooks';
import { enc, get, pushedEvery, useLive, type Tube } from './api.js';
import { ErrorLine, Sortable } from './ui.js';

const PAGE = 100;
/** At most this often a push fetches the page again (sorting 10,000 tubes by a count reads them all). */
const REFRESH_MS = 2000;
type Key = 'name' | 'ready' | 'urgent' | 'reserved' | 'delayed' | 'buried' | 'total' | 'oldestReadyAge';
const COLUMNS: Array<[Key, string]> = [['name', 'tube'], ['ready', 'ready'], ['urgent', 'urgent'], ['reserved', 'reserved'], ['delayed', 'delayed'],
  ['buried', 'buried'], ['total', 'total'], ['oldestReadyAge', 'oldest ready']];

export function Tubes() {
  const [filter, setFilter] = useState('');
  const [sort, setSort] = useState<{ key: Key; desc: boolean }>({ key: 'name', desc: false });
  const [offset, setOffset] = useState(0);
  const [page, setPage] = useState<{ total: number; tubes: Tube[] } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const live = useLive();
  useEffect(() => {
    const q = `filter=${enc(filter)}&sort=${sort.key}&order=${sort.desc ? 'desc' : 'asc'}&offset=${offset}&limit=${PAGE}`;
    get<{ total: number; tubes: Tube[] }>(`api/tubes?${q}`).then((p) => { setPage(p); setError(null); }, (e: Error) => setError(e.message));
  }, [filter, sort, offset, pushedEvery(live, REFRESH_MS)]);
  const onSort = (key: Key) => { setSort((s) => ({ key, desc: s.key === key ? !s.desc : key !== 'name' })); setOffset(0); };
  return (
    <div>
      <div class="bar">
        <input type="search" placeholder="filter tubes by name" value={filter} aria-label="filter tubes"
          onInput={(e) => { setFilter((e.target as HTMLInputElement).value); setOffset(0); }} />
        {page && <span>{page.total} tubes{page.total > PAGE ? `, ${offset + 1}–${Math.min(offset + PAGE, page.total)}` : ''}</span>}
        <button disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>previous</button>
        <button disabled={!page || offset + PAGE >= page.total} onClick={() => setOffset(offset + PAGE)}>next</button>
      </div>
      <ErrorLine error={error} />
      <table class="tubes">
        <thead><tr>{COLUMNS.map(([k, label]) => <Sortable key={k} name={k} label={label} sort={sort} onSort={onSort} />)}<th>put/s</th><th>deleted/s</th><th>paused</th></tr></thead>
        <tbody>{page?.tubes.map((t) => (
          <tr key={t.name}>
            <td><a href={`#/tube/${enc(t.name)}`}>{t.name}</a></td>
            <td>{t.ready}</td><td>{t.urgent}</td><td>{t.reserved}</td><td>{t.delayed}</td><td>{t.buried}</td><td>{t.total}</td>
            <td>{t.oldestReadyAge === null ? '-' : `${t.oldestReadyAge.toFixed(1)}s`}</td>
            <td>{t.rates?.put.toFixed(1) ?? '-'}</td><td>{t.rates?.deleted.toFixed(1) ?? '-'}</td>
            <td>{t.paused ? `${t.pauseLeft}s` : '-'}</td>
          </tr>
        ))}</tbody>
      </table>
    </div>
  );
}
