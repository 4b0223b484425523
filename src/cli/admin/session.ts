// What every admin subcommand shares: where the server is (-s/--server, env
// REDSTALK_SERVER, default 127.0.0.1:11300), --json, and a connection made with
// redstalk's own thin client (clients/node), closed when the command is done.
import { Command } from 'commander';
import { Client } from '../../../clients/node/src/index.js';

export interface AdminOptions { server: string; json?: boolean }

export function serverAddress(text: string): { host: string; port: number } {
  const m = /^(?:\[(.+)\]|([^:]*))(?::(\d+))?$/.exec(text);
  if (!m) throw new Error(`not a host:port: ${text}`);
  return { host: m[1] ?? (m[2] || '127.0.0.1'), port: Number(m[3] ?? 11300) };
}

/** An admin subcommand: its options, and a body that gets a connected client. */
export function adminCommand(parent: Command, spec: string, description: string): Command {
  return parent.command(spec).description(description)
    .option('-s, --server <host:port>', 'the redstalk (or beanstalkd) to talk to (env REDSTALK_SERVER)', process.env.REDSTALK_SERVER ?? '127.0.0.1:11300')
    .option('--json', 'print JSON');
}

export async function withClient<T>(opts: AdminOptions, body: (c: Client) => Promise<T>): Promise<T> {
  const c = await Client.connect({ ...serverAddress(opts.server), timeoutMs: 5000 });
  try {
    return await body(c);
  } finally {
    await c.close();
  }
}

export function print(opts: { json?: boolean }, value: unknown, text: () => string): void {
  process.stdout.write(opts.json ? `${JSON.stringify(value)}\n` : `${text()}\n`);
}

/** Rows as an aligned text table (the first row is the header). */
export function table(rows: ReadonlyArray<ReadonlyArray<string | number>>): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => String(r[i] ?? '').length)));
  return rows.map((r) => r.map((v, i) => (i === 0 ? String(v).padEnd(widths[i]!) : String(v).padStart(widths[i]!))).join('  ').trimEnd()).join('\n');
}
