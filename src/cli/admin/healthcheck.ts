// redstalk healthcheck: exit 0 when the sidecar's HTTP endpoint says it is
// healthy (or, with --ready, ready), else 1. For Docker's HEALTHCHECK and other
// probes where no curl is installed.
import type { Command } from 'commander';

export function addHealthcheckCommand(program: Command): void {
  program.command('healthcheck').description('ask the --http endpoint of a running sidecar; exit 0 if healthy (or ready), else 1')
    .option('--http <addr:port>', 'the sidecar\'s --http address (env REDSTALK_HTTP)', process.env.REDSTALK_HTTP || '127.0.0.1:11301')
    .option('--ready', 'ask /readyz instead of /healthz')
    .option('--timeout-ms <ms>', 'give up after this long', (v: string) => Number(v), 2000)
    .action(async (o: { http: string; ready?: boolean; timeoutMs: number }) => {
      const url = `http://${o.http.replace(/^0\.0\.0\.0:/, '127.0.0.1:')}/${o.ready ? 'readyz' : 'healthz'}`;
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(o.timeoutMs) });
        const body = (await res.text()).trim();
        process.stdout.write(`${res.status} ${body}\n`);
        process.exitCode = res.ok ? 0 : 1;
      } catch (err) {
        process.stdout.write(`${url}: ${(err as Error).message}\n`);
        process.exitCode = 1;
      }
    });
}
