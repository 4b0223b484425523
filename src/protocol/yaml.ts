// YAML lists as beanstalkd prints them: "---\n", then "- item\n" per item, no
// escaping. (Documents with fields: src/protocol/stats.ts.)

export function yamlList(items: Iterable<string>): string {
  let out = '---\n';
  for (const item of items) out += `- ${item}\n`;
  return out;
}
