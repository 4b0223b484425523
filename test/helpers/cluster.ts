import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, waitForPort } from './ports.js';

export interface TestCluster { ports: number[]; url: string; stop(): Promise<void> }

/** A private 3-primary Redis Cluster on free loopback ports, no replicas. */
export async function startCluster(size = 3): Promise<TestCluster> {
  const dir = mkdtempSync(path.join(tmpdir(), 'redstalk-test-cluster-'));
  const ports: number[] = [];
  const children: ChildProcess[] = [];
  for (let i = 0; i < size; i++) {
    // Cluster bus port = port + 10000: pick ports whose bus port is free too.
    let port = await freePort();
    while (port > 55535) port = await freePort();
    const nodeDir = path.join(dir, String(port));
    spawnSync('mkdir', ['-p', nodeDir]);
    children.push(spawn('redis-server', [
      '--port', String(port), '--bind', '127.0.0.1', '--dir', nodeDir, '--cluster-enabled', 'yes',
      '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '5000', '--save', '', '--appendonly', 'no',
      '--daemonize', 'no', '--loglevel', 'warning',
    ], { stdio: 'ignore' }));
    ports.push(port);
  }
  for (const p of ports) await waitForPort(p);
  const create = spawnSync('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'], { encoding: 'utf8' });
  if (create.status !== 0) throw new Error(`cluster create failed: ${create.stdout}${create.stderr}`);
  for (let i = 0; i < 200; i++) {
    const ok = ports.every((p) => spawnSync('redis-cli', ['-p', String(p), 'cluster', 'info'], { encoding: 'utf8' }).stdout.includes('cluster_state:ok'));
    if (ok) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    ports,
    url: `redis-cluster://${ports.map((p) => `127.0.0.1:${p}`).join(',')}`,
    async stop() {
      await Promise.all(children.map((c) => new Promise((r) => {
        if (c.exitCode !== null) return r(null);
        c.once('exit', r);
        c.kill('SIGTERM');
      })));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
