// The command line of `redstalk serve` and `redstalk config check`: one option
// per row of the settings table, plus beanstalkd's flags that map onto them
// (-f, -F, -V) or are accepted without effect (-s).
import { Command, InvalidArgumentError, Option } from 'commander';
import type { ConfigInput } from '../config/load.js';
import { envName, SETTING_NAMES, SETTINGS, type SettingName } from '../config/settings.js';

function wholeNumber(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('not a whole number');
  return Number(value);
}

/** The option of each setting, by setting name. */
function settingOption(name: SettingName): Option {
  const row = SETTINGS[name];
  const shown = row.default === '' ? '' : `, default ${row.default}`;
  const option = new Option(row.flag, `${row.help} (env ${envName(name)}${shown})`);
  return row.schema.type === 'integer' ? option.argParser(wholeNumber) : option;
}

/** commander's key for each setting's option (--batch-inflight: batchInflight). */
const ATTRIBUTE = Object.fromEntries(SETTING_NAMES.map((n) => [n, new Option(SETTINGS[n].flag).attributeName()])) as Record<SettingName, string>;

export function addConfigOptions(cmd: Command): Command {
  cmd.option('-c, --config <file>', 'a configuration file, JSON or YAML, of setting names and values (env REDSTALK_CONFIG)');
  for (const name of SETTING_NAMES) cmd.addOption(settingOption(name));
  return cmd
    .option('-f, --fsync-ms <ms>', 'beanstalkd: 0 is --fsync always, otherwise --fsync everysec', wholeNumber)
    .option('-F, --never-fsync', 'beanstalkd: --fsync no')
    .option('-s, --log-size <bytes>', 'beanstalkd\'s binlog size: accepted, no effect', wholeNumber)
    .option('-V, --verbose', 'increase verbosity: -V is --log-level debug, -VV trace', (_v: string, n: number) => n + 1, 0);
}

const VERBOSE_LEVELS = ['info', 'debug', 'trace'] as const;

/** What the parsed options say, as settings; plus warnings for beanstalkd flags with no effect here. */
export function configInput(opts: Record<string, unknown>, env: NodeJS.ProcessEnv): { input: ConfigInput; warnings: string[] } {
  const flags: ConfigInput['flags'] = {};
  for (const name of SETTING_NAMES) {
    const v = opts[ATTRIBUTE[name]];
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') flags[name] = v;
  }
  const warnings: string[] = [];
  const fsyncMs = opts.fsyncMs as number | undefined;
  if (opts.neverFsync) flags.fsync ??= 'no';
  else if (fsyncMs !== undefined) {
    flags.fsync ??= fsyncMs === 0 ? 'always' : 'everysec';
    if (fsyncMs > 0) warnings.push(`-f ${fsyncMs}: the embedded redis-server fsyncs its append-only file every second`);
  }
  if (opts.logSize !== undefined) warnings.push('-s has no effect: Redis persistence replaces the binlog');
  const verbose = opts.verbose as number;
  if (verbose > 0) flags.logLevel ??= VERBOSE_LEVELS[Math.min(verbose, VERBOSE_LEVELS.length - 1)];
  const input: ConfigInput = { flags, env };
  if (typeof opts.config === 'string') input.file = opts.config;
  return { input, warnings };
}
