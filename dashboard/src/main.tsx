// The dashboard shell: a hash router (#/, #/tubes, #/tube/<name>, #/rooms),
// the admin token (for changes; the server refuses them without it), and the
// light or dark theme (the system's until chosen).
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { token } from './api.js';
import { Overview } from './overview.js';
import { Rooms } from './rooms.js';
import { TubeView } from './tube.js';
import { Tubes } from './tubes.js';

type Theme = 'light' | 'dark';
const THEME_KEY = 'redstalk-theme';

function initialTheme(): Theme {
  const saved = localStorage.getItem(THEME_KEY);
  if (saved === 'light' || saved === 'dark') return saved;
  return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash;
}

function Page({ hash }: { hash: string }) {
  const tube = /^#\/tube\/(.+)$/.exec(hash);
  if (tube) return <TubeView key={tube[1]} name={decodeURIComponent(tube[1]!)} />;
  if (hash === '#/tubes') return <Tubes />;
  if (hash === '#/rooms') return <Rooms />;
  return <Overview />;
}

function App() {
  const hash = useHash();
  const [theme, setTheme] = useState<Theme>(initialTheme);
  const [tokenText, setTokenText] = useState(token.get());
  useEffect(() => { document.documentElement.dataset.theme = theme; }, [theme]);
  const nav = (href: string, label: string, active: boolean) => <a href={href} class={active ? 'active' : ''}>{label}</a>;
  return (
    <div>
      <header>
        <strong>redstalk</strong>
        <nav>
          {nav('#/', 'overview', hash === '' || hash === '#/')}
          {nav('#/tubes', 'tubes', hash === '#/tubes' || hash.startsWith('#/tube/'))}
          {nav('#/rooms', 'rooms', hash === '#/rooms')}
        </nav>
        <span class="spacer" />
        <input type="password" placeholder="admin token (for changes)" aria-label="admin token" value={tokenText}
          onInput={(e) => { const v = (e.target as HTMLInputElement).value; setTokenText(v); token.set(v); }} />
        <button aria-label="theme" onClick={() => { const t = theme === 'dark' ? 'light' : 'dark'; localStorage.setItem(THEME_KEY, t); setTheme(t); }}>
          {theme === 'dark' ? 'light' : 'dark'} theme
        </button>
      </header>
      <main><Page hash={hash} /></main>
    </div>
  );
}

render(<App />, document.getElementById('app')!);
