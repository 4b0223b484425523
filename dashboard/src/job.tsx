// One job: its stats and its whole body, as text (escaped by rendering it as
// text, never as markup) or as hex.
import { useEffect, useState } from 'preact/hooks';
import { get, hex, type Body, type Job } from './api.js';
import { ErrorLine } from './ui.js';

export function JobDetail({ id, onClose }: { id: string; onClose: () => void }) {
  const [job, setJob] = useState<(Job & { body: Body }) | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [asHex, setAsHex] = useState(false);
  useEffect(() => {
    setJob(null);
    get<Job & { body: Body }>(`api/jobs/${id}`).then((j) => { setJob(j); setAsHex(j.body.text === null); setError(null); }, (e: Error) => setError(e.message));
  }, [id]);
  return (
    <aside class="detail" aria-label={`job ${id}`}>
      <div class="bar"><h3>job <span class="mono">{id}</span></h3><button onClick={onClose}>close</button></div>
      <ErrorLine error={error} />
      {job && (
        <div>
          <table class="stats"><tbody>
            {(['tube', 'state', 'pri', 'age', 'delay', 'ttr', 'timeLeft', 'reserves', 'timeouts', 'releases', 'buries', 'kicks'] as const).map((k) => (
              <tr key={k}><th>{k}</th><td>{String(job[k])}</td></tr>
            ))}
          </tbody></table>
          <div class="bar">
            <span>{job.body.bytes} bytes</span>
            <button disabled={job.body.text === null} onClick={() => setAsHex(!asHex)}>{asHex ? 'show text' : 'show hex'}</button>
          </div>
          <pre class="body" data-body>{asHex ? hex(job.body.base64) : job.body.text}</pre>
        </div>
      )}
    </aside>
  );
}
