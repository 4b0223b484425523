// The one error type a store throws: the server maps its kind to the
// protocol's reply (OUT_OF_MEMORY, INTERNAL_ERROR) without knowing the backend.

export type StoreErrorKind =
  /** The store refuses writes that would grow it (Redis: OOM over maxmemory). */
  | 'full'
  /** The call did not take effect: the store was unreachable, or it refused the call. */
  | 'failed'
  /**
   * The call was sent but its answer never came (timed out, or the link broke
   * while it was in flight): it may or may not have taken effect.
   */
  | 'unknown';

export class StoreError extends Error {
  constructor(readonly kind: StoreErrorKind, message: string) {
    super(message);
  }

  override get name(): string { return 'StoreError'; }
}

export function isStoreFull(err: unknown): boolean {
  return err instanceof StoreError && err.kind === 'full';
}

export function isOutcomeUnknown(err: unknown): boolean {
  return err instanceof StoreError && err.kind === 'unknown';
}
