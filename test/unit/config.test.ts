// The settings table drives the flags, the environment, files, the library API
// and the README; each path accepts and refuses exactly the same values.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateValidator, VALIDATOR_PATH } from '../../scripts/gen-config-validator.js';
import { README_PATH, readmeWithTable } from '../../scripts/gen-readme-settings.js';
import { checkConfig, ConfigError } from '../../src/config/check.js';
import { unixSocketOptions } from '../../src/store/redis/connect.js';
import { loadConfig } from '../../src/config/load.js';
import { DEFAULTS, envName, SETTING_NAMES, SETTINGS, type SettingName } from '../../src/config/settings.js';
import { createServer } from '../../src/index.js';
import { ROOT } from '../helpers/redstalk.js';

/** A valid value for each setting that is not its default. */
function otherValue(name: SettingName): string | number | boolean {
  const s = SETTINGS[name].schema as { type: string; minimum?: number; maximum?: number; enum?: string[] };
  if (s.type === 'boolean') return true;
  if (s.enum) return s.enum.find((v) => v !== DEFAULTS[name])!;
  if (s.type === 'integer') {
    const v = (s.minimum ?? 0) + 1;
    return v === DEFAULTS[name] ? v + 1 : v;
  }
  if (name === 'redisUrl') return 'redis://127.0.0.1:1';
  if (name === 'http') return '127.0.0.1:1';
  return 'other';
}

const cli = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/cli.ts'), ...args], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, ...env } });

describe('the settings table', () => {
  it('gives every setting a REDSTALK_ environment variable that sets it', async () => {
    // Two starts: a token and a token file may not be given together.
    for (const group of [SETTING_NAMES.filter((n) => n !== 'authTokenFile'), ['authTokenFile'] as SettingName[]]) {
      const env = Object.fromEntries(group.map((n) => [envName(n), String(otherValue(n))]));
      expect(Object.keys(env).every((k) => /^REDSTALK_[A-Z_]+$/.test(k))).toBe(true);
      const { config, sources } = await loadConfig({ flags: {}, env });
      for (const n of group) {
        expect(config[n], n).toBe(otherValue(n));
        expect(sources[n]).toBe('env');
      }
    }
  });

  it('ranks flags over the environment over a file, and reads JSON and YAML files', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'redstalk-config-'));
    writeFileSync(path.join(dir, 'c.yaml'), 'port: 4000\nprefix: fromfile\nbatchOps: 7\n');
    writeFileSync(path.join(dir, 'c.json'), '{"port": 4001}');
    const yaml = await loadConfig({ flags: { port: 4002 }, env: { REDSTALK_PREFIX: 'fromenv' }, file: path.join(dir, 'c.yaml') });
    expect([yaml.config.port, yaml.config.prefix, yaml.config.batchOps]).toEqual([4002, 'fromenv', 7]);
    expect([yaml.sources.port, yaml.sources.prefix, yaml.sources.batchOps]).toEqual(['flag', 'env', 'file']);
    expect((await loadConfig({ flags: {}, env: { REDSTALK_CONFIG: path.join(dir, 'c.json') } })).config.port).toBe(4001);
  });

  it('refuses unknown names and bad values, naming the setting, the value and where it came from', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'redstalk-config-'));
    writeFileSync(path.join(dir, 'c.json'), '{"batchOpz": 3}');
    await expect(loadConfig({ flags: {}, env: {}, file: path.join(dir, 'c.json') })).rejects.toThrow(/unknown setting "batchOpz" \(from the file\)/);
    await expect(loadConfig({ flags: {}, env: { REDSTALK_PORT: '99999' } })).rejects.toThrow(/port must be <= 65535 \(got 99999\) \(from REDSTALK_PORT\)/);
    await expect(loadConfig({ flags: {}, env: { REDSTALK_BATCH_OPS: '12x' } })).rejects.toThrow(/batchOps must be a whole number .*REDSTALK_BATCH_OPS/);
    expect(() => checkConfig({ fsync: 'sometimes' }, { fsync: 'flag' })).toThrow(/fsync must be equal to one of the allowed values \(got "sometimes"\) \(from the flag\)/);
    expect(() => checkConfig({ roomCapacity: 0 })).toThrow(ConfigError);
  });

  it('warns of a REDSTALK_ variable that is no setting (a typo would leave the default)', async () => {
    const { warnings } = await loadConfig({ flags: {}, env: { REDSTALK_PROT: '1', REDSTALK_SERVER: 'x:1' } });
    expect(warnings).toEqual([expect.stringMatching(/^REDSTALK_PROT is not a setting \(ignored\)/)]);
  });

  it('reads a switch from the environment as true/false, 1/0, on/off or yes/no, and refuses anything else', async () => {
    for (const [text, on] of [['on', true], ['1', true], ['YES', true], ['false', false], ['off', false], ['0', false]] as const) {
      expect((await loadConfig({ flags: {}, env: { REDSTALK_DASHBOARD: text, REDSTALK_HTTP: '127.0.0.1:1' } })).config.dashboard).toBe(on);
    }
    await expect(loadConfig({ flags: {}, env: { REDSTALK_DASHBOARD: 'maybe' } })).rejects.toThrow(/dashboard must be true or false \(got "maybe"\) \(from REDSTALK_DASHBOARD\)/);
    expect(() => checkConfig({ dashboard: true })).toThrow(/dashboard is served by the http endpoint/);
    expect(() => checkConfig({ httpAdminToken: 'has space secret' })).toThrow(/\(got "\*\*\*"\)/);
  });

  it('never shows a secret in an error: a bad auth token or a Redis URL with a password is masked', () => {
    expect(() => checkConfig({ authToken: 'has space secret' })).toThrow(/authToken must match .* \(got "\*\*\*"\)/);
    expect(() => checkConfig({ authToken: 'has space secret' })).not.toThrow(/secret/);
    expect(() => checkConfig({ redisUrl: 'http://:hunter2@h:1' })).toThrow(/\(got "http:\/\/\*\*\*@h:1"\)/);
    expect(() => checkConfig({ redisUrl: 'unix:relative?password=hunter2' })).toThrow(/\(got "unix:relative\?password=\*\*\*"\)/);
    expect(() => checkConfig({ redisUrl: 'redis-sentinel:/h:1?master=m&sentinelPassword=hunter2' })).toThrow(/sentinelPassword=\*\*\*"\)/);
  });

  it('takes a Redis on a unix socket as unix:///path[?db=N&password=P]', () => {
    expect(checkConfig({ redisUrl: 'unix:///run/redis/redis.sock' }).config.redisUrl).toBe('unix:///run/redis/redis.sock');
    expect(unixSocketOptions('unix:///run/redis%20x/redis.sock?db=2&password=p%26q')).toEqual({ path: '/run/redis x/redis.sock', db: 2, password: 'p&q' });
    expect(() => unixSocketOptions('unix://relative.sock')).toThrow(/not a unix:\/\/ URL/);
  });

  it('clamps -z to 1 GiB with a warning, as beanstalkd', () => {
    const { config, warnings } = checkConfig({ maxJobSize: 2 ** 31 });
    expect(config.maxJobSize).toBe(2 ** 30);
    expect(warnings[0]).toMatch(/clamped/);
  });

  it('makes the library API refuse what the command line refuses', async () => {
    await expect(createServer({ redisUrl: 'redis://127.0.0.1:1', batchOps: 0 })).rejects.toThrow(/batchOps must be >= 1 \(got 0\) \(from the options\)/);
    await expect(createServer({ redisUrl: 'redis://127.0.0.1:1', ...({ bogus: 1 } as object) })).rejects.toThrow(/unknown setting "bogus"/);
  });

  it('is compiled into src/config/validate.generated.ts as it stands (npm run gen:config)', () => {
    expect(readFileSync(VALIDATOR_PATH, 'utf8')).toBe(generateValidator());
  });

  it('is what the README\'s settings table shows (npm run gen:readme)', () => {
    const readme = readFileSync(README_PATH, 'utf8');
    expect(readme).toBe(readmeWithTable(readme));
  });
});

describe('redstalk config check', () => {
  it('prints the effective settings and their sources, with secrets masked', () => {
    const r = cli(['config', 'check', '--json', '-p', '1234', '-V', '--redis', 'redis://user:secret@127.0.0.1:6390'], { REDSTALK_BATCH_OPS: '64' });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { config: Record<string, unknown>; sources: Record<string, string> };
    expect(out.config).toMatchObject({ port: 1234, logLevel: 'debug', batchOps: 64, redisUrl: 'redis://***@127.0.0.1:6390' });
    expect(out.sources).toMatchObject({ port: 'flag', batchOps: 'env', prefix: 'default' });
    expect(r.stdout).not.toContain('secret');
  });

  it('exits 2 with the reason on an invalid setting or an unknown flag', () => {
    const bad = cli(['config', 'check', '--batch-ops', '0']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/batchOps must be >= 1 \(got 0\) \(from the flag\)/);
    const unknown = cli(['--bogus']);
    expect(unknown.status).not.toBe(0);
    expect(unknown.stderr).toMatch(/unknown option '--bogus'/);
  });
});
