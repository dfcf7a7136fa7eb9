// Shared pieces: data loading, readable errors, state badges, raw JSON, copy buttons, form fields
// and the polite live region that announces updates to screen readers.
import type { ComponentChildren, JSX } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { api, describe } from "./api";
import { markdownHtml } from "./markdown";

export function useApi<T>(path: string | null, deps: unknown[] = []) {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  const seq = useRef(0);
  const load = useCallback(async () => {
    if (!path) return;
    const mine = ++seq.current;
    setLoading(true);
    try {
      const d = await api<T>("GET", path);
      if (mine === seq.current) { setData(d); setError(null); }
    } catch (e) {
      if (mine === seq.current) setError(e);
    } finally {
      if (mine === seq.current) setLoading(false);
    }
  }, [path, ...deps]);
  useEffect(() => { load(); }, [load]);
  return { data, error, loading, reload: load, setData };
}

// A mutation with its own busy flag and error, for buttons and forms.
export function useAction<A extends unknown[], R>(fn: (...args: A) => Promise<R>) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = async (...args: A): Promise<R | undefined> => {
    setBusy(true); setError(null);
    try { return await fn(...args); } catch (e) { setError(e); return undefined; } finally { setBusy(false); }
  };
  return { run, busy, error, setError };
}

export function ErrorBox({ error, title }: { error: unknown; title?: string }) {
  if (!error) return null;
  const d = describe(error);
  return (
    <div class="alert alert-error" role="alert">
      <strong>{title ? `${title}: ` : ""}{d.title}</strong>
      {d.detail && <p>{d.detail}</p>}
      {d.fields.length > 0 && <ul>{d.fields.map((f) => <li key={f}>{f}</li>)}</ul>}
      <p class="muted small">Error code <code>{d.code}</code>{d.requestId && <> · request <code>{d.requestId}</code></>}</p>
    </div>
  );
}

export function Loading({ what = "Loading" }: { what?: string }) {
  return <p class="muted loading" role="status">{what}…</p>;
}

const STATE_TONE: Record<string, string> = {
  running: "blue", queued: "blue", awaiting_input: "amber", awaiting_outcome: "amber", awaiting_approval: "amber",
  closed: "green", succeeded: "green", resolved: "green", identified: "green",
  failed: "red", cancelled: "grey", pending: "grey", revoked: "grey",
  approved: "green", denied: "red", waiting: "amber",
};

export function Badge({ value, tone }: { value: string; tone?: string }) {
  const t = tone || STATE_TONE[value] || "grey";
  return <span class={`badge badge-${t}`}>{value.replace(/_/g, " ")}</span>;
}

export function StatusCode({ status }: { status: number }) {
  const tone = status >= 500 ? "red" : status >= 400 ? "amber" : "green";
  return <span class={`badge badge-${tone} mono`}>{status}</span>;
}

export function RawJson({ value, label = "Raw JSON" }: { value: unknown; label?: string }) {
  return (
    <details class="raw">
      <summary>{label}</summary>
      <pre class="code">{JSON.stringify(value, null, 2)}</pre>
    </details>
  );
}

export function CopyButton({ text, label = "Copy" }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      // Clipboard API refused (plain http on a remote host): fall back to a selection copy.
      const ta = document.createElement("textarea");
      ta.value = text; document.body.appendChild(ta); ta.select();
      try { document.execCommand("copy"); } finally { ta.remove(); }
    }
    setDone(true); announce("Copied to the clipboard.");
    setTimeout(() => setDone(false), 2000);
  };
  return <button type="button" class="btn btn-small" onClick={copy}>{done ? "Copied" : label}</button>;
}

let seqId = 0;
export function Field({ label, hint, children, id }: { label: string; hint?: string; children: (id: string) => JSX.Element; id?: string }) {
  const [fid] = useState(() => id || `f${++seqId}`);
  return (
    <div class="field">
      <label for={fid}>{label}</label>
      {children(fid)}
      {hint && <p class="hint" id={`${fid}-hint`}>{hint}</p>}
    </div>
  );
}

export function Card({ title, actions, children, class: cls }: { title?: ComponentChildren; actions?: ComponentChildren; children: ComponentChildren; class?: string }) {
  return (
    <section class={`card ${cls || ""}`}>
      {(title || actions) && <header class="card-head">{title && <h2>{title}</h2>}{actions && <div class="actions">{actions}</div>}</header>}
      {children}
    </section>
  );
}

export function PageHead({ title, sub, actions }: { title: ComponentChildren; sub?: ComponentChildren; actions?: ComponentChildren }) {
  useEffect(() => { if (typeof title === "string") document.title = `${title} · Heddle console`; }, [title]);
  return (
    <div class="page-head">
      <div><h1 tabIndex={-1} id="page-title">{title}</h1>{sub && <p class="muted">{sub}</p>}</div>
      {actions && <div class="actions">{actions}</div>}
    </div>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <div class="empty">{children}</div>;
}

// One polite live region for the whole app (updates, copies, saves).
const announcers = new Set<(m: string) => void>();
export function announce(message: string) { announcers.forEach((fn) => fn(message)); }

export function LiveRegion() {
  const [msg, setMsg] = useState("");
  useEffect(() => {
    const fn = (m: string) => { setMsg(""); setTimeout(() => setMsg(m), 30); };
    announcers.add(fn);
    return () => { announcers.delete(fn); };
  }, []);
  return <div class="sr-only" aria-live="polite" role="status" id="live">{msg}</div>;
}

// A visible, dismissable notice after a save (also announced).
export function Notice({ message, onClose }: { message: string | null; onClose: () => void }) {
  useEffect(() => { if (message) announce(message); }, [message]);
  if (!message) return null;
  return (
    <div class="alert alert-success">
      <span>{message}</span>
      <button type="button" class="btn-link" onClick={onClose} aria-label="Dismiss">Dismiss</button>
    </div>
  );
}

// A message's Markdown, sanitized (markdown.ts); each code block gets a Copy button.
export function Markdown({ text, class: cls }: { text: string; class?: string }) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const root = ref.current;
    if (!root) return;
    root.innerHTML = markdownHtml(text);
    for (const pre of Array.from(root.querySelectorAll("pre"))) {
      const box = document.createElement("div");
      box.className = "md-code";
      const button = document.createElement("button");
      button.type = "button";
      button.className = "btn btn-small md-copy";
      button.textContent = "Copy";
      button.setAttribute("aria-label", "Copy code");
      button.addEventListener("click", async () => {
        try { await navigator.clipboard.writeText(pre.textContent || ""); button.textContent = "Copied"; }
        catch { button.textContent = "Select and copy"; }
        announce("Copied to the clipboard.");
        setTimeout(() => { button.textContent = "Copy"; }, 2000);
      });
      pre.replaceWith(box);
      box.append(button, pre);
    }
  }, [text]);
  return <div ref={ref} class={`md ${cls || ""}`} />;
}
