// A tiny history router: the server answers index.html for every /console/... path, and the app
// picks its page from location.pathname. Links are real <a href>s, so open-in-new-tab works.
import type { AnchorHTMLAttributes, ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";

export const BASE = "/console";
const listeners = new Set<() => void>();

export function navigate(to: string, replace = false) {
  const url = to.startsWith(BASE) ? to : BASE + to;
  if (url === location.pathname + location.search) return;
  if (replace) history.replaceState(null, "", url); else history.pushState(null, "", url);
  listeners.forEach((fn) => fn());
}

export function useLocation(): { path: string; query: URLSearchParams } {
  const [, tick] = useState(0);
  useEffect(() => {
    const fn = () => tick((n) => n + 1);
    listeners.add(fn);
    window.addEventListener("popstate", fn);
    return () => { listeners.delete(fn); window.removeEventListener("popstate", fn); };
  }, []);
  const path = location.pathname.replace(/^\/console/, "") || "/";
  return { path, query: new URLSearchParams(location.search) };
}

// Update the query string in place (filters), without a new history entry per keystroke.
export function setQuery(params: Record<string, string>) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) p.set(k, v);
  const s = p.toString();
  navigate(location.pathname + (s ? `?${s}` : ""), true);
}

type LinkProps = AnchorHTMLAttributes<HTMLAnchorElement> & { href: string; children?: ComponentChildren };

export function Link({ href, children, ...rest }: LinkProps) {
  const url = href.startsWith(BASE) ? href : BASE + href;
  const onClick = (e: MouseEvent) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(url);
    window.scrollTo(0, 0);
  };
  return <a href={url} onClick={onClick} {...rest}>{children}</a>;
}

// Match "/w/:ws/runs/:run" against a path; returns params or null.
export function match(pattern: string, path: string): Record<string, string> | null {
  const a = pattern.split("/").filter(Boolean), b = path.split("/").filter(Boolean);
  if (a.length !== b.length) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i < a.length; i++) {
    if (a[i].startsWith(":")) out[a[i].slice(1)] = decodeURIComponent(b[i]);
    else if (a[i] !== b[i]) return null;
  }
  return out;
}
