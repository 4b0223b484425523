// The one error type a store throws: the server maps its kind to the
// protocol's reply (OUT_OF_MEMORY, INTERNAL_ERROR) without knowing the backend.

export type StoreErrorKind =
  /** The store refuses writes that would grow it (Redis: OOM over maxmemory). */
  | 'full'
  /** Anything else: unreachable, timed out, a script error. */
  | 'failed';

export class StoreError extends Error {
  constructor(readonly kind: StoreErrorKind, message: string) {
    super(message);
  }

  override get name(): string { return 'StoreError'; }
}

export function isStoreFull(err: unknown): boolean {
  return err instanceof StoreError && err.kind === 'full';
}
