// A task run now and then every `ms` until stopped, off the command path; a
// failure is reported and the next run goes ahead.
export function every(ms: number, task: () => Promise<unknown>, onError: (err: unknown) => void): () => void {
  const run = () => void task().catch(onError);
  run();
  const timer = setInterval(run, ms);
  timer.unref();
  return () => clearInterval(timer);
}
