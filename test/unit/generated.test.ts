// Files derived from protocol/ are never stale, and the stats model agrees
// with the command table.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { GENERATED_PATH, generateProtocolTypes } from '../../scripts/gen-protocol.js';
import { COMMANDS, PROTOCOL } from '../../src/protocol/spec.js';
import { COMMAND_COUNTERS, STATS_DOCUMENTS } from '../../src/protocol/stats.js';
import { buildLibrary } from '../../src/store/redis/scripts.js';
import { ROOT } from '../helpers/redstalk.js';

const json = (file: string) => JSON.parse(readFileSync(path.join(ROOT, file), 'utf8'));

describe('protocol/stats.json', () => {
  it('is valid against its JSON Schema', () => {
    const validate = new Ajv({ allErrors: true }).compile(json('protocol/schema/stats.schema.json'));
    expect(validate(json('protocol/stats.json')), JSON.stringify(validate.errors)).toBe(true);
  });

  it('has a document for every command that answers one, and a counter field for every counted command', () => {
    const yaml = COMMANDS.filter((c) => c.yaml && c.yaml !== 'list').map((c) => c.yaml).sort();
    expect(Object.keys(STATS_DOCUMENTS).sort()).toEqual(yaml);
    for (const c of COMMANDS) expect(c.replies.some((r) => r.startsWith('OK <')), c.name).toBe(c.yaml !== undefined);
    const counted = COMMANDS.filter((c) => c.counter).map((c) => c.counter);
    expect([...COMMAND_COUNTERS].sort()).toEqual(counted.sort());
  });

  it('names each body-carrying reply of the command table', () => {
    const withBytes = new Set(COMMANDS.flatMap((c) => c.replies).filter((r) => r.includes('<bytes>') || r.startsWith('RESERVED-MANY ')));
    expect(new Set(Object.keys(PROTOCOL.replyBodies))).toEqual(withBytes);
  });
});

describe('src/protocol/generated.ts', () => {
  it('is what scripts/gen-protocol.ts writes from protocol/ (run npm run gen:protocol)', () => {
    expect(readFileSync(GENERATED_PATH, 'utf8')).toBe(generateProtocolTypes());
  });
});

describe('dist/redstalk.cjs', () => {
  it('carries the Redis Functions libraries built from lua/ (npm run build), so a start reads no Lua file', () => {
    const bundle = readFileSync(path.join(ROOT, 'dist/redstalk.cjs'), 'latin1');
    for (const options of [{}, { shardedPubSub: true }]) expect(bundle).toContain(buildLibrary(options).name);
  });
});
