// The layers of src/ import one way: any import circle (type-only imports
// included, since they still tie the files' designs together) fails the suite.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/redstalk.js';

const SRC = path.join(ROOT, 'src');
const IMPORT = /^\s*(?:import|export)\s[^'"]*?from\s+'(\.{1,2}\/[^']+)'/gm;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

/** file -> the src/ files it imports (relative imports, `.js` written for `.ts`). */
export function importGraph(files: readonly string[], read: (file: string) => string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const targets = [...read(file).matchAll(IMPORT)]
      .map((m) => path.resolve(path.dirname(file), m[1]!).replace(/\.js$/, '.ts'))
      .filter((t) => files.includes(t));
    graph.set(file, targets);
  }
  return graph;
}

/** Every cycle found by a depth-first search, each as the list of files around it. */
export function findCycles(graph: Map<string, string[]>): string[][] {
  const cycles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (f: string) => {
    state.set(f, 'open');
    stack.push(f);
    for (const t of graph.get(f) ?? []) {
      if (state.get(t) === 'open') cycles.push(stack.slice(stack.indexOf(t)));
      else if (!state.has(t)) visit(t);
    }
    stack.pop();
    state.set(f, 'done');
  };
  for (const f of graph.keys()) if (!state.has(f)) visit(f);
  return cycles;
}

describe('imports in src/', () => {
  it('form no circle', () => {
    const files = sourceFiles(SRC);
    expect(files.length).toBeGreaterThan(20);
    const rel = (f: string) => path.relative(SRC, f);
    expect(findCycles(importGraph(files, (f) => readFileSync(f, 'utf8'))).map((c) => c.map(rel).join(' -> '))).toEqual([]);
  });

  it('a circle, type-only or not, is found', () => {
    const files = ['/s/a.ts', '/s/b.ts', '/s/c.ts'];
    const text: Record<string, string> = {
      '/s/a.ts': "import { b } from './b.js';",
      '/s/b.ts': "import type { C } from './c.js';\nexport { x } from './a.js';",
      '/s/c.ts': '',
    };
    expect(findCycles(importGraph(files, (f) => text[f]!))).toEqual([['/s/a.ts', '/s/b.ts']]);
  });
});
