// Open dashboards for the benchmark's mixed-dashboards scenario (scenarios.ts):
// each one server-sent event stream of /api/events, as a dashboard page holds
// (every other one a tube's page), read and dropped. The live feed reads the
// store once per interval whatever the number of listeners, and nothing per
// job: `npm run bench -- --scenarios mixed,mixed-dashboards` shows what they cost.

/** `n` open dashboards: event streams read and dropped; how many events they got. */
export function openDashboards(http: string, n: number): { close(): void; events(): number } {
  const controller = new AbortController();
  let events = 0;
  for (let i = 0; i < n; i++) {
    void fetch(`http://${http}/api/events${i % 2 ? '?tube=default' : ''}`, { signal: controller.signal }).then(async (res) => {
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        events += decoder.decode(value).split('event: live').length - 1;
      }
    }).catch(() => {});
  }
  return { close: () => controller.abort(), events: () => events };
}
