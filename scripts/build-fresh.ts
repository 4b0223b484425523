// Whether a checkout's build (`npm run build`: dist/cli.js runs the bundle
// dist/redstalk.cjs) is as new as every source it is built from: src/, the Lua
// library (prebuilt into the bundle), protocol/ and the Node client (the admin
// commands import its source). Used by vitest.config.ts (the client suites run
// the build only when it is fresh) and the bench (which refuses a stale one).
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const BUILT_FROM = ['src', 'lua', 'protocol', 'clients/node/src'];

/** The newest modification time of the files under `dir` (ms). */
function newestUnder(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) newest = Math.max(newest, statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

/** Why `root`'s build cannot stand for its sources (missing, or older than one of them), or null when it can. */
export function staleBuild(root: string): string | null {
  const cli = path.join(root, 'dist', 'cli.js');
  const bundle = path.join(root, 'dist', 'redstalk.cjs');
  if (!existsSync(cli) || !existsSync(bundle)) return `${path.join(root, 'dist')} has no build`;
  const built = statSync(bundle).mtimeMs;
  const newer = BUILT_FROM.find((dir) => newestUnder(path.join(root, dir)) > built);
  return newer ? `${bundle} is older than ${newer}/` : null;
}
