// redstalk [serve] takes beanstalkd's own flags (-b -f -F -l -p -u -z -s -v -V)
// and one flag per setting (src/config/settings.ts); `redstalk config check`
// prints the settings a start with the same flags would use.
import { Command } from 'commander';
import { ConfigError } from './config/check.js';
import { loadConfig, type LoadedConfig } from './config/load.js';
import { renderConfig } from './cli/config-check.js';
import { addConfigOptions, configInput } from './cli/options.js';
import { addHealthcheckCommand } from './cli/admin/healthcheck.js';
import { addJobsCommand } from './cli/admin/jobs.js';
import { addInspectCommands } from './cli/admin/inspect.js';
import { addTopCommand } from './cli/admin/top.js';
import { addReshardCommand } from './cli/admin/reshard.js';
import { addTransferCommands } from './cli/admin/transfer.js';
import pkg from '../package.json' with { type: 'json' };

async function load(opts: Record<string, unknown>): Promise<LoadedConfig> {
  const { input, warnings } = configInput(opts, process.env);
  try {
    const loaded = await loadConfig(input);
    return { ...loaded, warnings: [...warnings, ...loaded.warnings] };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`redstalk: ${err.message}\n`);
    process.exit(2);
  }
}

/** Flags that set up the embedded redis-server, by option name. */
const EMBEDDED_ONLY: Record<string, string> = { dataDir: '-b', fsyncMs: '-f', neverFsync: '-F', fsync: '--fsync' };

async function serveAction(opts: Record<string, unknown>): Promise<void> {
  const { config, warnings } = await load(opts);
  const embeddedOnly = Object.entries(EMBEDDED_ONLY).filter(([k]) => opts[k] !== undefined).map(([, flag]) => flag);
  // Loaded only to serve: `config check` and --help stay quick.
  const { serve } = await import('./cli/serve.js');
  await serve(config, warnings, embeddedOnly);
}

const program = new Command('redstalk')
  .description('beanstalkd-compatible work queue that keeps every job in Redis')
  .version(`redstalk ${pkg.version}`, '-v, --version', 'show version information')
  .helpOption('-h, --help', 'show this help')
  // Options after a subcommand are that subcommand's (they share their names with the default command's).
  .enablePositionalOptions();

addConfigOptions(program).action(serveAction);
addConfigOptions(program.command('serve').description('run the sidecar (the default command)')).action(serveAction);

// Admin subcommands talk to a running sidecar over the protocol.
addInspectCommands(program);
addTransferCommands(program);
addReshardCommand(program);
addTopCommand(program);
addHealthcheckCommand(program);
addJobsCommand(program);

const config = program.command('config').description('configuration tools');
addConfigOptions(config.command('check').description('check the configuration and print the effective settings (exit 2 if invalid)'))
  .option('--json', 'print JSON')
  .action(async (opts: Record<string, unknown>) => { process.stdout.write(renderConfig(await load(opts), Boolean(opts.json))); });

// (Not a top-level await: the command line is bundled as CommonJS, src/launch.ts.)
program.parseAsync(process.argv).catch((err: unknown) => {
  process.stderr.write(`redstalk: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
