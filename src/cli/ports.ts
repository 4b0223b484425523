// Loopback port helpers shared by the embedded Redis and the test harness.
import net from 'node:net';

/** A TCP port on 127.0.0.1 that was free a moment ago (the OS picked it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** Whether something accepts a connection made by `connect` right now. */
export function accepts(connect: () => net.Socket): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const s = connect();
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
  });
}

/** Polls until something accepts; `check` may throw to give up early (e.g. the server exited). */
export async function waitUntilAccepting(connect: () => net.Socket, what: string, timeoutMs: number, check: () => void = () => {}, everyMs = 20): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    check();
    if (await accepts(connect)) return;
    if (Date.now() > until) throw new Error(`nothing listens on ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export const loopback = (port: number) => () => net.connect(port, '127.0.0.1');
