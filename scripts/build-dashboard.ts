// Builds the dashboard (dashboard/: Preact, compiled by esbuild) into static
// files: dist/dashboard/index.html and assets/app.js, app.css. No CDN, no
// file from elsewhere at run time. Run by `npm run build`; the tests that
// drive the dashboard build it first.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const DASHBOARD_OUT = path.join(ROOT, 'dist/dashboard');

export async function buildDashboard(out = DASHBOARD_OUT): Promise<void> {
  mkdirSync(path.join(out, 'assets'), { recursive: true });
  await build({
    entryPoints: { app: path.join(ROOT, 'dashboard/src/main.tsx') },
    bundle: true, format: 'esm', target: 'es2020', minify: true, sourcemap: true,
    jsx: 'automatic', jsxImportSource: 'preact', outdir: path.join(out, 'assets'), logLevel: 'warning',
  });
  await build({ entryPoints: { app: path.join(ROOT, 'dashboard/src/style.css') }, bundle: true, minify: true, outdir: path.join(out, 'assets'), logLevel: 'warning' });
  copyFileSync(path.join(ROOT, 'dashboard/index.html'), path.join(out, 'index.html'));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await buildDashboard();
