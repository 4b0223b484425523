// No Docker engine here: the Dockerfile, compose.yaml and deploy/k8s are
// checked against the real command line instead. Every flag and REDSTALK_*
// variable they use must be one `redstalk config check` accepts, the ports
// they publish and probe must be the ones the sidecar listens on, and the
// image's entrypoint must be the built command line.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { envName, SETTING_NAMES } from '../../src/config/settings.js';
import { ROOT } from '../helpers/redstalk.js';

const KNOWN_ENV = new Set([...SETTING_NAMES.map(envName), 'REDSTALK_CONFIG', 'REDSTALK_SERVER']);
const read = (f: string) => readFileSync(path.join(ROOT, f), 'utf8');

/** The settings `redstalk config check` derives from these arguments and variables (throws with its message if refused). */
function configCheck(args: string[], env: Record<string, string>): Record<string, unknown> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('REDSTALK_')));
  const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/cli.ts'), 'config', 'check', '--json', ...args],
    { cwd: ROOT, encoding: 'utf8', env: { ...clean, ...env } });
  if (r.status !== 0) throw new Error(`config check refused ${JSON.stringify(args)} ${JSON.stringify(env)}: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { config: Record<string, unknown> }).config;
}

interface Dockerfile { stages: number; env: Record<string, string>; entrypoint: string[]; cmd: string[]; healthcheck: string[]; user: string; expose: number[] }

function parseDockerfile(text: string): Dockerfile {
  const lines = text.replace(/\\\n\s*/g, ' ').split('\n').filter((l) => l.trim() && !l.trimStart().startsWith('#'));
  const froms = lines.flatMap((l, i) => (/^FROM /i.test(l) ? [i] : []));
  const runtime = lines.slice(froms.at(-1));
  const exec = (l: string | undefined) => JSON.parse(l!.replace(/^\S+\s+/, '')) as string[];
  const env: Record<string, string> = {};
  for (const l of runtime.filter((x) => /^ENV /.test(x))) for (const m of l.matchAll(/(\w+)=(\S+)/g)) env[m[1]!] = m[2]!;
  const health = runtime.find((l) => /^HEALTHCHECK /.test(l))!;
  return {
    stages: lines.filter((l) => /^FROM /.test(l)).length, env,
    entrypoint: exec(runtime.find((l) => /^ENTRYPOINT /.test(l))), cmd: exec(runtime.find((l) => /^CMD /.test(l))),
    healthcheck: JSON.parse(health.slice(health.indexOf('CMD ') + 4)) as string[],
    user: runtime.filter((l) => /^USER /.test(l)).at(-1)!.split(/\s+/)[1]!,
    expose: runtime.filter((l) => /^EXPOSE /.test(l)).flatMap((l) => l.split(/\s+/).slice(1).map(Number)),
  };
}

const portOf = (address: unknown) => Number(String(address).split(':').at(-1));

describe('the container image', () => {
  const docker = parseDockerfile(read('Dockerfile'));

  it('builds in two stages, runs as a non-root user, and starts the built command line in exec form', () => {
    expect(docker.stages).toBe(2);
    expect(docker.user).not.toMatch(/^(root|0)$/);
    expect(docker.entrypoint).toEqual(['node', 'dist/cli.js']);
    // dist/cli.js runs the command line's bundle (src/launch.ts).
    expect(read('tsup.config.ts')).toMatch(/entry: \{ cli: 'src\/launch\.ts' \}/);
    expect(read('tsup.config.ts')).toMatch(/entry: \{ redstalk: 'src\/cli\.ts' \}/);
    expect(docker.healthcheck).toEqual([...docker.entrypoint, 'healthcheck']);
  });

  it('uses only settings the command line accepts, and exposes the ports it listens on', () => {
    for (const k of Object.keys(docker.env).filter((k) => k.startsWith('REDSTALK_'))) expect(KNOWN_ENV, k).toContain(k);
    const config = configCheck(docker.cmd.slice(1), docker.env);
    expect(docker.cmd[0]).toBe('serve');
    expect(docker.expose.sort()).toEqual([config.port, portOf(config.http)].sort());
    expect(config.listen).toBe('0.0.0.0');
  });

  it('compose runs it beside a Redis with AOF and noeviction, publishing its ports', () => {
    const compose = parse(read('compose.yaml')) as { services: Record<string, { command?: string[]; environment?: Record<string, string>; ports?: string[] }> };
    const redis = compose.services.redis!.command!.join(' ');
    expect(redis).toMatch(/--appendonly yes/);
    expect(redis).toMatch(/--maxmemory-policy noeviction/);
    const svc = compose.services.redstalk!;
    for (const k of Object.keys(svc.environment ?? {})) expect(KNOWN_ENV, k).toContain(k);
    const config = configCheck([], { ...docker.env, ...svc.environment });
    expect(config.redisUrl).toBe('redis://redis:6379');
    expect(svc.ports!.map((p) => Number(p.split(':').at(-1))).sort()).toEqual([config.port, portOf(config.http)].sort());
  });
});

describe('deploy/k8s/sidecar.yaml', () => {
  const pod = parseAllDocuments(read('deploy/k8s/sidecar.yaml'))[0]!.toJS() as {
    spec: { terminationGracePeriodSeconds: number; initContainers: Array<Record<string, unknown>>; containers: unknown[] };
  };
  const sidecar = pod.spec.initContainers.find((c) => c.name === 'redstalk') as {
    restartPolicy: string; args: string[]; env: Array<{ name: string; value?: string }>;
    ports: Array<{ containerPort: number }>; readinessProbe: Probe; livenessProbe: Probe; startupProbe: Probe;
  };
  type Probe = { httpGet: { path: string; port: number } };

  it('runs redstalk as a native sidecar next to the app', () => {
    expect(sidecar.restartPolicy).toBe('Always');
    expect(pod.spec.containers.length).toBeGreaterThan(0);
  });

  it('passes flags and variables the command line accepts, and probes the endpoint it serves', () => {
    for (const e of sidecar.env) expect(KNOWN_ENV, e.name).toContain(e.name);
    const secret = (name: string) => (name === 'REDSTALK_REDIS_URL' ? 'redis-sentinel://:pw@sentinel-0:26379,sentinel-1:26379?master=mymaster' : 'token-from-a-secret');
    const env = Object.fromEntries(sidecar.env.map((e) => [e.name, e.value ?? secret(e.name)]));
    expect(sidecar.args[0]).toBe('serve');
    const config = configCheck(sidecar.args.slice(1), env);
    const http = portOf(config.http);
    expect(sidecar.ports.map((p) => p.containerPort)).toContain(http);
    expect([sidecar.readinessProbe, sidecar.startupProbe].map((p) => p.httpGet)).toEqual([{ path: '/readyz', port: http }, { path: '/readyz', port: http }]);
    expect(sidecar.livenessProbe.httpGet).toEqual({ path: '/healthz', port: http });
  });

  it('gives SIGTERM more time than a stop needs (redis timeout + shutdown grace)', () => {
    const config = configCheck([], {});
    expect(pod.spec.terminationGracePeriodSeconds * 1000).toBeGreaterThan((config.redisTimeoutMs as number) + (config.shutdownGraceMs as number));
  });
});
