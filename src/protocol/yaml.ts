// YAML documents as beanstalkd prints them with printf: "---\n", one
// "key: value\n" (or "- item\n") per line, no escaping. 1.13 quotes a few
// string values; QUOTED lists which.

export type StatValue = string | number | boolean;

const QUOTED = new Set(['version', 'hostname', 'os', 'platform', 'name', 'tube']);

export function yamlDict(entries: Array<[string, StatValue]>): string {
  let out = '---\n';
  for (const [k, v] of entries) out += QUOTED.has(k) ? `${k}: "${v}"\n` : `${k}: ${v}\n`;
  return out;
}

export function yamlList(items: Iterable<string>): string {
  let out = '---\n';
  for (const item of items) out += `- ${item}\n`;
  return out;
}
