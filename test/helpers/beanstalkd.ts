import { spawn, spawnSync } from 'node:child_process';
import { freePort, waitForPort } from './ports.js';

export const hasBeanstalkd = spawnSync('sh', ['-c', 'command -v beanstalkd'], { stdio: 'ignore' }).status === 0;

export interface TestBeanstalkd { port: number; stop(): Promise<void>; }

/** Starts the real beanstalkd (Debian's 1.12) on a free loopback port, in-memory. */
export async function startBeanstalkd(extraArgs: string[] = []): Promise<TestBeanstalkd> {
  const port = await freePort();
  const child = spawn('beanstalkd', ['-l', '127.0.0.1', '-p', String(port), ...extraArgs], { stdio: 'ignore' });
  await waitForPort(port);
  return {
    port,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
