// Where a configuration comes from: defaults < a file (--config, JSON or
// YAML) < the environment (REDSTALK_<NAME>) < command-line flags.
import { readFileSync } from 'node:fs';
import { checkConfig, ConfigError, fromText, type Sources } from './check.js';
import { envName, SETTING_NAMES, type Config, type SettingName } from './settings.js';

export interface ConfigInput {
  /** Values given on the command line, by setting name. */
  flags: Partial<Record<SettingName, string | number | boolean>>;
  env: NodeJS.ProcessEnv;
  /** --config or REDSTALK_CONFIG. */
  file?: string;
}

export interface LoadedConfig { config: Config; warnings: string[]; sources: Required<Sources> }

export async function readConfigFile(path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read the configuration file ${path}: ${(err as Error).message}`);
  }
  let data: unknown;
  try {
    // yaml is loaded only for a YAML file: most starts have no file at all.
    data = /\.json$/i.test(path) ? JSON.parse(text) : (await import('yaml')).parse(text);
  } catch (err) {
    throw new ConfigError(`${path} is not valid ${/\.json$/i.test(path) ? 'JSON' : 'YAML'}: ${(err as Error).message}`);
  }
  if (data === null || data === undefined) return {};
  if (typeof data !== 'object' || Array.isArray(data)) throw new ConfigError(`${path} must hold a mapping of setting names to values`);
  return data as Record<string, unknown>;
}

export async function loadConfig(input: ConfigInput): Promise<LoadedConfig> {
  const values: Record<string, unknown> = {};
  const sources = Object.fromEntries(SETTING_NAMES.map((n) => [n, 'default'])) as Required<Sources>;
  const file = input.file ?? input.env.REDSTALK_CONFIG;
  if (file) {
    for (const [k, v] of Object.entries(await readConfigFile(file))) {
      values[k] = v;
      sources[k as SettingName] = 'file';
    }
  }
  for (const name of SETTING_NAMES) {
    const raw = input.env[envName(name)];
    if (raw === undefined || raw === '') continue;
    values[name] = fromText(name, raw, envName(name));
    sources[name] = 'env';
  }
  for (const [name, v] of Object.entries(input.flags)) {
    if (v === undefined) continue;
    values[name] = v;
    sources[name as SettingName] = 'flag';
  }
  const checked = checkConfig(values, sources);
  // A misspelt variable would silently leave its setting at the default.
  const known = new Set([...SETTING_NAMES.map(envName), ...OTHER_VARIABLES]);
  for (const k of Object.keys(input.env)) {
    if (k.startsWith('REDSTALK_') && !known.has(k)) checked.warnings.push(`${k} is not a setting (ignored); settings: ${[...known].join(', ')}`);
  }
  return { ...checked, sources };
}

/** REDSTALK_ variables that are not settings: the file of settings, the admin commands' server, the benchmark's and the client tests' sidecar. */
const OTHER_VARIABLES = ['REDSTALK_CONFIG', 'REDSTALK_SERVER', 'REDSTALK_BENCH_FLAGS', 'REDSTALK_CMD'];
