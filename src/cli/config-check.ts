// `redstalk config check`: the effective settings, each with where it came
// from, or the error that would stop the sidecar from starting (exit 2).
import { visibleConfig } from '../config/check.js';
import { envName, SETTING_NAMES } from '../config/settings.js';
import type { LoadedConfig } from '../config/load.js';


export function renderConfig({ config, sources, warnings }: LoadedConfig, json: boolean): string {
  const visible = visibleConfig(config);
  if (json) return `${JSON.stringify({ config: visible, sources, warnings }, null, 2)}\n`;
  const width = Math.max(...SETTING_NAMES.map((n) => n.length));
  const lines = SETTING_NAMES.map((n) => {
    const from = sources[n] === 'env' ? `env ${envName(n)}` : sources[n];
    return `${n.padEnd(width)}  ${JSON.stringify(visible[n])}  (${from})`;
  });
  return `${[...lines, ...warnings.map((w) => `warning: ${w}`)].join('\n')}\n`;
}
