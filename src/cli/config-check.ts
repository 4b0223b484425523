// `redstalk config check`: the effective settings, each with where it came
// from, or the error that would stop the sidecar from starting (exit 2).
import { envName, SETTING_NAMES } from '../config/settings.js';
import type { LoadedConfig } from '../config/load.js';

/** Secrets in a Redis URL are never printed. */
export function maskUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}

export function renderConfig({ config, sources, warnings }: LoadedConfig, json: boolean): string {
  const shown = { ...config, redisUrl: maskUrl(config.redisUrl), authToken: config.authToken ? '***' : '' };
  if (json) return `${JSON.stringify({ config: shown, sources, warnings }, null, 2)}\n`;
  const width = Math.max(...SETTING_NAMES.map((n) => n.length));
  const lines = SETTING_NAMES.map((n) => {
    const from = sources[n] === 'env' ? `env ${envName(n)}` : sources[n];
    return `${n.padEnd(width)}  ${JSON.stringify(shown[n])}  (${from})`;
  });
  return `${[...lines, ...warnings.map((w) => `warning: ${w}`)].join('\n')}\n`;
}
