// Waiting rooms with their state; pause and resume admission.
import { useEffect, useState } from 'preact/hooks';
import { enc, get, post, pushedEvery, useLive, type Room } from './api.js';
import { Action, ErrorLine } from './ui.js';

export function Rooms() {
  const [rooms, setRooms] = useState<Room[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const live = useLive();
  const load = () => get<Room[]>('api/rooms').then((r) => { setRooms(r); setError(null); }, (e: Error) => setError(e.message));
  useEffect(() => { void load(); }, [pushedEvery(live, 2000)]);
  return (
    <div>
      <ErrorLine error={error} />
      {rooms && rooms.length === 0 && <p>No waiting rooms.</p>}
      {rooms && rooms.length > 0 && (
        <table>
          <thead><tr><th>room</th><th>capacity</th><th>inside</th><th>waiting</th><th>open</th><th>admitted</th><th>dropouts</th><th>rate/min</th><th>admission</th></tr></thead>
          <tbody>{rooms.map((r) => (
            <tr key={r.name}>
              <td>{r.name}</td><td>{r.capacity}</td><td>{r.participants}</td><td>{r.waiting}</td><td>{r.openPlaces}</td>
              <td>{r.admittedTotal}</td><td>{r.dropoutsTotal}</td><td>{r.admissionRate}</td>
              <td>{r.paused ? 'paused ' : 'open '}
                <Action label={r.paused ? 'resume' : 'pause'} run={() => post(`api/rooms/${enc(r.name)}/pause`, { paused: !r.paused })} done={() => void load()} />
              </td>
            </tr>
          ))}</tbody>
        </table>
      )}
    </div>
  );
}
