// Configuration: defaults < environment < flags, validated once with ajv.
import { Ajv, type JSONSchemaType } from 'ajv';
import { LIMITS } from './protocol/spec.js';

export interface Config {
  listen: string;
  port: number;
  maxJobSize: number;
  /** Empty: run an embedded redis-server. */
  redisUrl: string;
  prefix: string;
  dataDir: string;
  /** Embedded Redis' appendfsync: beanstalkd's -f0 = always, -f MS = everysec, -F = no. */
  fsync: 'always' | 'everysec' | 'no';
  /** -u: become this user (and its group) once listening; empty: stay. */
  user: string;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Cross-connection batching caps (src/store/batcher.ts). */
  batchOps: number;
  batchBytes: number;
  batchInFlight: number;
  /** Defaults of waiting rooms without room-config (seconds, except capacity). */
  roomCapacity: number;
  roomCheckinTimeout: number;
  roomParticipantTimeout: number;
  roomGrace: number;
}

export const CONFIG_SCHEMA: JSONSchemaType<Config> = {
  type: 'object',
  additionalProperties: false,
  required: ['listen', 'port', 'maxJobSize', 'redisUrl', 'prefix', 'dataDir', 'fsync', 'user', 'logLevel', 'batchOps', 'batchBytes', 'batchInFlight',
    'roomCapacity', 'roomCheckinTimeout', 'roomParticipantTimeout', 'roomGrace'],
  properties: {
    listen: { type: 'string', minLength: 1 },
    port: { type: 'integer', minimum: 0, maximum: 65535 },
    maxJobSize: { type: 'integer', minimum: 0 },
    redisUrl: { type: 'string', pattern: '^((rediss?|redis-cluster)://.+)?$' },
    prefix: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,64}$' },
    dataDir: { type: 'string', minLength: 1 },
    fsync: { type: 'string', enum: ['always', 'everysec', 'no'] },
    user: { type: 'string' },
    logLevel: { type: 'string', enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] },
    batchOps: { type: 'integer', minimum: 1, maximum: 100000 },
    batchBytes: { type: 'integer', minimum: 1 },
    batchInFlight: { type: 'integer', minimum: 1, maximum: 64 },
    // The bounds room-config has (protocol/commands.json).
    roomCapacity: { type: 'integer', minimum: 1, maximum: 4294967295 },
    roomCheckinTimeout: { type: 'integer', minimum: 1, maximum: 4294967295 },
    roomParticipantTimeout: { type: 'integer', minimum: 1, maximum: 4294967295 },
    roomGrace: { type: 'integer', minimum: 0, maximum: 4294967295 },
  },
};

const validate = new Ajv({ allErrors: true }).compile(CONFIG_SCHEMA);

export class ConfigError extends Error {
  override get name(): string { return 'ConfigError'; }
}

/** Checks a merged config; beanstalkd clamps -z to 1 GiB, so do we. */
export function checkConfig(raw: Config): { config: Config; warnings: string[] } {
  if (!validate(raw)) {
    const why = (validate.errors ?? []).map((e) => `${e.instancePath || 'config'} ${e.message}`).join('; ');
    throw new ConfigError(`invalid configuration: ${why}`);
  }
  const warnings: string[] = [];
  const config = { ...raw };
  if (config.maxJobSize > LIMITS.maxJobSizeCap) {
    warnings.push(`maximum job size was set to ${config.maxJobSize}; clamped to ${LIMITS.maxJobSizeCap}`);
    config.maxJobSize = LIMITS.maxJobSizeCap;
  }
  return { config: Object.freeze(config), warnings };
}
