// The listening socket. It can be opened before the rest of the sidecar is
// loaded and connected to Redis, so that a start is quick (test harnesses
// connect as soon as the port accepts): connections that arrive early wait
// until the sidecar takes them. What they send meanwhile is read (up to a
// bound) and kept with the time it arrived, so that a command's time limit
// (reserve-with-timeout) counts from its arrival, not from the sidecar's.
import cluster from 'node:cluster';
import { lstatSync, readFileSync, unlinkSync } from 'node:fs';
import net from 'node:net';
import type tls from 'node:tls';

/** PEM files of the TLS listener; `ca` makes it require client certificates (mutual TLS). */
export interface TlsFiles { cert: string; key: string; ca?: string }

/** The TLS files a configuration names, or undefined for plain TCP. */
export function tlsFilesOf(config: { tlsCert: string; tlsKey: string; tlsCa: string }): TlsFiles | undefined {
  if (!config.tlsCert) return undefined;
  return config.tlsCa ? { cert: config.tlsCert, key: config.tlsKey, ca: config.tlsCa } : { cert: config.tlsCert, key: config.tlsKey };
}

function tlsOptions(files: TlsFiles): tls.TlsOptions {
  const read = (what: string, file: string) => {
    try {
      return readFileSync(file);
    } catch (err) {
      throw new Error(`cannot read the TLS ${what} ${file}: ${(err as Error).message}`);
    }
  };
  const options: tls.TlsOptions = { cert: read('certificate', files.cert), key: read('key', files.key), allowHalfOpen: true };
  if (files.ca) Object.assign(options, { ca: read('CA', files.ca), requestCert: true, rejectUnauthorized: true });
  return options;
}

/** `-l unix:PATH` (beanstalkd >= 1.12) listens on a UNIX socket; -p is then ignored. */
export function unixSocketPath(listen: string): string | null {
  return listen.startsWith('unix:') ? listen.slice(5) : null;
}

/** A socket file left by a process that died; anything else at the path is an error. */
export function removeStaleSocket(path: string): void {
  try {
    if (lstatSync(path).isSocket()) unlinkSync(path);
  } catch { /* nothing there */ }
}

/** Bytes a connection sent before the sidecar took it, and when they came (Date.now()). */
export interface EarlyRead { data: Buffer; at: number }

/** An early connection's input kept while the sidecar starts; beyond this it is left unread. */
const MAX_EARLY_INPUT = 1 << 20;

/**
 * The listening socket systemd (or systemd-socket-activate) passed as fd 3
 * (sd_listen_fds), as beanstalkd takes it: -l and -p are then not used. The
 * variables are removed, so that no child (the embedded redis-server) takes them.
 */
function activatedSocket(): number | null {
  const env = process.env;
  if (env.LISTEN_PID === undefined) return null;
  const ours = env.LISTEN_PID === String(process.pid) && Number(env.LISTEN_FDS) >= 1;
  delete env.LISTEN_PID;
  delete env.LISTEN_FDS;
  delete env.LISTEN_FDNAMES;
  return ours ? 3 : null;
}

export class Listener {
  /** Sockets accepted before a sidecar took the listener, with what they sent meanwhile. */
  private early: Map<net.Socket, EarlyRead[]> | null = new Map();
  private take: ((socket: net.Socket, early: readonly EarlyRead[]) => void) | null = null;

  private constructor(
    private readonly server: net.Server,
    /** host:port, or unix:PATH. */
    readonly address: string,
    /** The TCP port (0 for a UNIX socket). */
    readonly port: number,
  ) {}

  static async open(listen: string, port: number, tlsFiles?: TlsFiles): Promise<Listener> {
    let listener: Listener | null = null;
    const pending: net.Socket[] = [];
    const onSocket = (socket: net.Socket) => {
      if (listener) listener.accept(socket);
      else pending.push(socket);
    };
    // A TLS socket is handed over once its handshake is done; a failed handshake never reaches the sidecar.
    // TLS (and the crypto it brings) is loaded only when asked for: a start without it listens sooner.
    const server = tlsFiles ? (await import('node:tls')).createServer(tlsOptions(tlsFiles), onSocket) : net.createServer({ allowHalfOpen: true }, onSocket);
    const activated = cluster.isWorker ? null : activatedSocket();
    const socketPath = activated === null ? unixSocketPath(listen) : null;
    // A cluster worker's (--workers) socket is the primary's, shared by every
    // worker: a socket file at the path is the live one. The primary removed a stale one.
    if (socketPath && !cluster.isWorker) removeStaleSocket(socketPath);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      const listening = () => {
        server.off('error', reject);
        resolve();
      };
      if (activated !== null) server.listen({ fd: activated }, listening);
      else if (socketPath) server.listen(socketPath, listening);
      else server.listen(port, listen, listening);
    });
    const bound = server.address();
    const actualPort = typeof bound === 'object' && bound ? bound.port : 0;
    const address = typeof bound === 'string' ? `unix:${bound}`
      : socketPath ? `unix:${socketPath}` : `${typeof bound === 'object' && bound ? bound.address : listen}:${actualPort}`;
    listener = new Listener(server, address, actualPort);
    for (const socket of pending) listener.accept(socket);
    return listener;
  }

  private accept(socket: net.Socket): void {
    if (this.take) return this.take(socket, []);
    if (!this.early) { socket.destroy(); return; }
    const reads: EarlyRead[] = [];
    let bytes = 0;
    this.early.set(socket, reads);
    socket.on('data', (data: Buffer) => {
      reads.push({ data, at: Date.now() });
      bytes += data.length;
      if (bytes >= MAX_EARLY_INPUT) socket.pause();
    });
    socket.once('close', () => this.early?.delete(socket));
    socket.on('error', () => { /* surfaced as close */ });
  }

  /** From now on every connection goes to `take`, starting with those that waited (and what they sent). */
  attach(take: (socket: net.Socket, early: readonly EarlyRead[]) => void, onError: (err: Error) => void): void {
    this.server.on('error', onError);
    this.take = take;
    // (None when it was closed meanwhile: a stop during a start.)
    const early = this.early ?? new Map<net.Socket, EarlyRead[]>();
    this.early = null;
    for (const [socket, reads] of early) {
      socket.pause();
      socket.removeAllListeners('data');
    }
    // Their commands run once the caller has finished starting (after this tick's
    // promises: a drain asked for during the start applies to them); what they
    // send meanwhile waits in the paused socket, after what was read before.
    setImmediate(() => {
      for (const [socket, reads] of early) {
        socket.removeAllListeners('error');
        if (socket.destroyed) continue;
        take(socket, reads);
        // A client that half-closed while it waited (and whose bytes were all
        // read) has had its 'end' already: tell its new owner again.
        if (socket.readableEnded) socket.emit('end');
        else socket.resume();
      }
    });
  }

  /** Stops accepting; settles once every connection is gone. */
  close(): Promise<void> {
    for (const socket of this.early?.keys() ?? []) socket.destroy();
    this.early = null;
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
