// redstalk jobs list|search: a tube's jobs by state, or those a search finds,
// read from a running sidecar's admin API (--http, /api/tubes/<tube>/jobs):
// the very queries the dashboard makes, paged by the API's cursor.
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { print, table } from './session.js';

interface JobsOptions { http: string; state: string; limit: number; scan?: number; cursor: string; all?: boolean; json?: boolean }

interface ListedJob { id: string; state: string; pri: number; age: number; timeLeft: number; reserves: number; holder: string; preview: { text: string | null; base64: string } }
interface Page { jobs: ListedJob[]; next: string; scanned: number }

function positive(value: string): number {
  if (!/^[1-9]\d*$/.test(value)) throw new InvalidArgumentError('not a whole number above 0');
  return Number(value);
}

/** A body's first bytes on one line: control characters escaped, binary shown as base64. */
function shown(j: ListedJob): string {
  const text = j.preview.text ?? `base64:${j.preview.base64}`;
  return JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text).slice(1, -1);
}

async function page(o: JobsOptions, tube: string, cursor: string, q: string): Promise<Page> {
  const query = new URLSearchParams({ state: o.state, limit: String(o.limit), cursor, q, ...(o.scan ? { scan: String(o.scan) } : {}) });
  const res = await fetch(`http://${o.http}/api/tubes/${encodeURIComponent(tube)}/jobs?${query}`);
  const body = (await res.json()) as Page & { error?: string };
  if (!res.ok) throw new Error(`${res.status} ${body.error ?? ''}`);
  return body;
}

/** The pages asked for (all of them with --all), printed as they come. */
async function run(o: JobsOptions, tube: string, q: string): Promise<void> {
  let cursor = o.cursor;
  do {
    const p = await page(o, tube, cursor, q);
    print(o, p, () => [
      table([['id', 'state', 'pri', 'age', 'left', 'reserves', 'holder', 'body'],
        ...p.jobs.map((j) => [j.id, j.state, j.pri, j.age, j.timeLeft, j.reserves, j.holder || '-', shown(j)])]),
      p.next ? `(looked at ${p.scanned}; more from --cursor '${p.next}')` : `(looked at ${p.scanned}; the end)`,
    ].join('\n'));
    cursor = p.next;
  } while (o.all && cursor !== '');
}

export function addJobsCommand(program: Command): void {
  const jobs = program.command('jobs').description('a tube\'s jobs, listed or searched, from a sidecar\'s --http admin API');
  const common = (c: Command) => c
    .option('--http <addr:port>', 'the sidecar\'s --http address (env REDSTALK_HTTP)', process.env.REDSTALK_HTTP || '127.0.0.1:11301')
    .option('--state <state>', 'ready, delayed, reserved or buried', 'ready')
    .option('--limit <n>', 'jobs a page', positive, 50)
    .option('--scan <n>', 'jobs looked at a page at most (the server\'s default: 10000)', positive)
    .option('--cursor <cursor>', 'go on from where a page stopped', '')
    .option('--all', 'every page to the end')
    .option('--json', 'print each page as JSON');
  common(jobs.command('list <tube>').description('the jobs of a tube in a state, in that state\'s order'))
    .action((tube: string, o: JobsOptions) => run(o, tube, ''));
  common(jobs.command('search <tube> <text>').description('the jobs whose id is the text or whose body holds it'))
    .action((tube: string, text: string, o: JobsOptions) => run(o, tube, text));
}
