/**
 * Minimal types for fivebeans 1.5 (plain JavaScript, no bundled types), covering what
 * test/clients/fivebeans.test.ts uses. Written from node_modules/fivebeans/lib/*.js:
 * success calls back `(null, ...replyArgs)`, where every reply argument is a string
 * (ids and counts included), bodies are Buffers and YAML replies are parsed with
 * js-yaml; a failure calls back with the reply word alone (e.g. 'NOT_FOUND', 'TIMED_OUT').
 */
declare module 'fivebeans' {
  import { EventEmitter } from 'node:events';

  export type Callback<R extends unknown[] = []> = (err: string | null, ...results: R) => void;

  export class client extends EventEmitter {
    constructor(host?: string, port?: number);
    static LOWEST_PRIORITY: number;
    connect(): void;
    end(): void;
    stream: import('node:net').Socket | null;

    use(tube: string, cb: Callback<[tubename: string]>): void;
    list_tube_used(cb: Callback<[tubename: string]>): void;
    put(priority: number, delay: number, ttr: number, payload: Buffer | string, cb: Callback<[jobid: string]>): void;
    peek_ready(cb: Callback<[jobid: string, payload: Buffer]>): void;
    peek_delayed(cb: Callback<[jobid: string, payload: Buffer]>): void;
    peek_buried(cb: Callback<[jobid: string, payload: Buffer]>): void;

    watch(tube: string, cb: Callback<[numwatched: string]>): void;
    ignore(tube: string, cb: Callback<[numwatched: string]>): void;
    list_tubes_watched(cb: Callback<[tubelist: string[]]>): void;
    reserve(cb: Callback<[jobid: string, payload: Buffer]>): void;
    reserve_with_timeout(seconds: number, cb: Callback<[jobid: string, payload: Buffer]>): void;
    touch(jobid: string, cb: Callback): void;
    destroy(jobid: string, cb: Callback): void;
    release(jobid: string, priority: number, delay: number, cb: Callback): void;
    bury(jobid: string, priority: number, cb: Callback): void;
    kick(maxToKick: number, cb: Callback<[numkicked: string]>): void;
    kick_job(jobid: string, cb: Callback): void;

    peek(jobid: string, cb: Callback<[jobid: string, payload: Buffer]>): void;
    pause_tube(tube: string, delay: number, cb: Callback): void;
    list_tubes(cb: Callback<[tubenames: string[]]>): void;
    stats_job(jobid: string, cb: Callback<[response: Record<string, unknown>]>): void;
    stats_tube(tube: string, cb: Callback<[response: Record<string, unknown>]>): void;
    stats(cb: Callback<[response: Record<string, unknown>]>): void;
    quit(cb: Callback): void;
  }

  export interface WorkerHandler {
    type: string;
    /** Two-argument form, or (issue #25) three-argument form `work(jobID, payload, callback)`. */
    work(...args: any[]): void;
  }

  export interface WorkerOptions {
    id: string;
    host: string;
    port: number;
    handlers: Record<string, WorkerHandler>;
    ignoreDefault?: boolean;
    /** reserve-with-timeout seconds, default 10. */
    timeout?: number;
  }

  export class worker extends EventEmitter {
    constructor(options: WorkerOptions);
    client: client | null;
    start(tubes: string[]): void;
    stop(): void;
  }

  export const LOWEST_PRIORITY: number;
}
