// cluster-key-slot (ioredis' own dependency) ships no types.
declare module 'cluster-key-slot' {
  /** The Redis Cluster hash slot of a key (honouring a {hash tag}). */
  export default function slotOf(key: string | Buffer): number;
}
