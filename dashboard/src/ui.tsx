// Small pieces every view uses: a figure, a table header that sorts, an
// action button that shows what the server answered, the error line.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';

export function Figure({ label, value }: { label: string; value: string | number }) {
  return <div class="figure"><div class="value">{value}</div><div class="label">{label}</div></div>;
}

export function Sortable<K extends string>({ name, label, sort, onSort }: { name: K; label: string; sort: { key: K; desc: boolean }; onSort: (key: K) => void }) {
  const mark = sort.key === name ? (sort.desc ? ' ▼' : ' ▲') : '';
  return <th><button class="link" onClick={() => onSort(name)}>{label}{mark}</button></th>;
}

/** A button that runs a change and then shows the server's answer (or its refusal). */
export function Action({ label, run, done, confirm }: { label: string; run: () => Promise<unknown>; done?: () => void; confirm?: string }) {
  const [note, setNote] = useState<{ ok: boolean; text: string } | null>(null);
  const click = async () => {
    if (confirm && !window.confirm(confirm)) return;
    try {
      const r = await run();
      setNote({ ok: true, text: JSON.stringify(r) });
      done?.();
    } catch (err) {
      setNote({ ok: false, text: (err as Error).message });
    }
  };
  return (
    <span class="action">
      <button onClick={click}>{label}</button>
      {note && <span class={note.ok ? 'ok' : 'refused'} role="status">{note.text}</span>}
    </span>
  );
}

export function ErrorLine({ error }: { error: string | null }) {
  return error ? <p class="refused" role="alert">{error}</p> : null;
}

export function Section({ title, children }: { title: string; children: ComponentChildren }) {
  return <section><h2>{title}</h2>{children}</section>;
}
