// One check for every way a configuration arrives (command line, environment,
// file, the library API): the JSON Schema derived from the settings table,
// with errors that name the setting, its value and where it came from.
import { LIMITS } from '../protocol/spec.js';
import { DEFAULTS, envName, SETTING_NAMES, SETTINGS, type Config, type SettingName } from './settings.js';
import validateSettings from './validate.generated.js';

interface SchemaError { instancePath: string; message?: string }
const validate = validateSettings as ((data: unknown) => boolean) & { errors?: SchemaError[] | null };

/** Secrets in a Redis URL are never printed. */
function maskUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@').replace(/([?&](?:sentinelP|p)assword=)[^&]*/g, '$1***');
}

/** A setting's value as messages and `config check` show it: secrets masked. */
export function shown(name: string, value: unknown): unknown {
  if (name === 'authToken' || name === 'httpAdminToken') return value ? '***' : '';
  if (name === 'redisUrl' && typeof value === 'string') return maskUrl(value);
  return value;
}

/** A whole configuration as logs and `config check` show it. */
export function visibleConfig(config: Config): Record<string, unknown> {
  return Object.fromEntries(Object.entries(config).map(([k, v]) => [k, shown(k, v)]));
}

export class ConfigError extends Error {
  override get name(): string { return 'ConfigError'; }
}


/** Where a setting's value came from, for messages and `config check`. */
export type Source = 'default' | 'file' | 'env' | 'flag' | 'api';
export type Sources = Partial<Record<SettingName, Source>>;

function origin(name: string, sources: Sources): string {
  const source = sources[name as SettingName];
  if (source === 'env') return ` (from ${envName(name as SettingName)})`;
  return source && source !== 'default' ? ` (from the ${source === 'api' ? 'options' : source})` : '';
}

/**
 * Merges values over the defaults and checks them: unknown names and values
 * out of range are errors; -z above what beanstalkd allows is clamped, as it does.
 */
export function checkConfig(values: Partial<Record<string, unknown>>, sources: Sources = {}): { config: Config; warnings: string[] } {
  for (const name of Object.keys(values)) {
    if (!(name in SETTINGS)) throw new ConfigError(`unknown setting "${name}"${origin(name, sources)}; known: ${SETTING_NAMES.join(', ')}`);
  }
  const merged: Record<string, unknown> = { ...DEFAULTS };
  for (const [k, v] of Object.entries(values)) if (v !== undefined) merged[k] = v;
  if (!validate(merged)) {
    const why = (validate.errors ?? []).map((e) => {
      const name = e.instancePath.slice(1);
      return `${name} ${e.message} (got ${JSON.stringify(shown(name, merged[name]))})${origin(name, sources)}`;
    });
    throw new ConfigError(`invalid configuration: ${why.join('; ')}`);
  }
  const config = merged as Config;
  if (Boolean(config.tlsCert) !== Boolean(config.tlsKey)) throw new ConfigError('invalid configuration: tlsCert and tlsKey go together');
  if (config.tlsCa && !config.tlsCert) throw new ConfigError('invalid configuration: tlsCa (client certificates) needs tlsCert and tlsKey');
  if (config.authToken && config.authTokenFile) throw new ConfigError('invalid configuration: give authToken or authTokenFile, not both');
  if (config.dashboard && !config.http) throw new ConfigError('invalid configuration: dashboard is served by the http endpoint: set http too');
  if (config.tlsCert && config.listen.startsWith('unix:')) throw new ConfigError('invalid configuration: TLS is for the TCP listener, not unix:PATH');
  const warnings: string[] = [];
  if (config.maxJobSize > LIMITS.maxJobSizeCap) {
    warnings.push(`maximum job size was set to ${config.maxJobSize}; clamped to ${LIMITS.maxJobSizeCap}`);
    config.maxJobSize = LIMITS.maxJobSizeCap;
  }
  return { config: Object.freeze(config), warnings };
}

/** A setting's value from its environment variable's text, typed by its schema. */
export function fromText(name: SettingName, raw: string, where: string): string | number | boolean {
  const type = SETTINGS[name].schema.type;
  if (type === 'string') return raw;
  if (type === 'boolean') {
    const v = raw.trim().toLowerCase();
    if (['true', '1', 'on', 'yes'].includes(v)) return true;
    if (['false', '0', 'off', 'no'].includes(v)) return false;
    throw new ConfigError(`${name} must be true or false (got ${JSON.stringify(raw)}) (from ${where})`);
  }
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a whole number (got ${JSON.stringify(raw)}) (from ${where})`);
  return Number(raw.trim());
}
