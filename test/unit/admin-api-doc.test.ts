// protocol/admin-api.yaml documents every route the admin API serves, and no other.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ADMIN_ROUTES } from '../../src/http/admin-routes.js';
import { LIVE_ROUTE } from '../../src/http/live.js';
import { ROOT } from '../helpers/redstalk.js';

describe('protocol/admin-api.yaml', () => {
  it('names exactly the routes of src/http/admin-routes.ts and the live feed', () => {
    const doc = parse(readFileSync(path.join(ROOT, 'protocol/admin-api.yaml'), 'utf8')) as { paths: Record<string, Record<string, unknown>> };
    const documented = Object.entries(doc.paths).flatMap(([p, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${p.replace(/\{[^}]+\}/g, '*')}`));
    expect(documented.sort()).toEqual([...ADMIN_ROUTES, LIVE_ROUTE].sort());
  });
});
