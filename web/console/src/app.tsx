// The shell: who is signed in, the workspace navigation, and which page the path names.
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { api, onSignedOut, setCsrf } from "./api";
import { ErrorBox, LiveRegion, Loading, useApi } from "./components";
import { Link, match, navigate, useLocation } from "./router";
import { SignedOut } from "./pages/signed_out";
import { Workspaces } from "./pages/workspaces";
import { Runs } from "./pages/runs";
import { RunTrace } from "./pages/run_trace";
import { Thread } from "./pages/thread";
import { Ledger } from "./pages/ledger";
import { Requests } from "./pages/requests";
import { Identify } from "./pages/identify";
import { Settings } from "./pages/settings";
import { AgentPage } from "./pages/agent";
import { AgentsPage } from "./pages/settings_agents";
import { Threads } from "./pages/threads";
import { OverviewPage } from "./pages/overview";
import { Schedules } from "./pages/schedules";
import { FeedbackPage } from "./pages/feedback";
import { EvalsPage } from "./pages/evals";

export interface Me { id: string; email: string; csrf_token: string }
interface Workspace { id: string; name: string; balance_credits: number }

export function App() {
  const [me, setMe] = useState<Me | null>(null);
  const [state, setState] = useState<"loading" | "in" | "out" | "error">("loading");
  const [error, setError] = useState<unknown>(null);

  useEffect(() => {
    onSignedOut(() => { setCsrf(null); setMe(null); setState("out"); });
    api<Me>("GET", "/me").then((m) => { setCsrf(m.csrf_token); setMe(m); setState("in"); })
      .catch((e) => { if (e.code === "console_unauthenticated") setState("out"); else { setError(e); setState("error"); } });
  }, []);

  if (state === "loading") return <main class="center"><Loading what="Opening the console" /></main>;
  if (state === "out") return <SignedOut />;
  if (state === "error") {
    const missing = (error as { code?: string })?.code === "not_found";
    return (
      <main class="center"><div class="narrow">
        <h1>Heddle console</h1>
        {missing ? <p>This server does not answer the console API at <code>/console/api</code>: it may be an older
          version of Heddle than this console. Update the server, then reload.</p> : <ErrorBox error={error} title="The console could not start" />}
      </div></main>
    );
  }
  return <Shell me={me!} />;
}

const NAV = [
  ["overview", "Overview"], ["runs", "Runs"], ["threads", "Threads"], ["schedules", "Schedules"], ["agents", "Agents"], ["feedback", "Feedback"], ["evals", "Evals"], ["ledger", "Ledger"], ["requests", "Request log"],
  ["identify", "Identify"], ["settings", "Settings"],
] as const;

function Shell({ me }: { me: Me }) {
  const { path } = useLocation();
  const ws = path.match(/^\/w\/([^/]+)/)?.[1] || null;

  // Move focus to the new page's heading so keyboard and screen-reader users land on it.
  useEffect(() => {
    const t = setTimeout(() => document.getElementById("page-title")?.focus({ preventScroll: true }), 60);
    return () => clearTimeout(t);
  }, [path]);

  const logout = async () => {
    try { await api("POST", "/logout"); } finally { onSignedOutNow(); }
  };
  const onSignedOutNow = () => { setCsrf(null); location.assign("/console"); };

  return (
    <div class="shell">
      <a class="skip" href="#main">Skip to content</a>
      <header class="topbar">
        <Link href="/" class="brand" aria-label="Heddle console, workspaces"><span class="logo" aria-hidden="true" />Heddle</Link>
        {ws && <WorkspaceSwitcher ws={ws} />}
        <div class="topbar-right">
          <span class="muted small" title="Signed-in operator">{me.email}</span>
          <button type="button" class="btn btn-small" onClick={logout}>Sign out</button>
        </div>
      </header>
      <div class={ws ? "body with-nav" : "body"}>
        {ws && (
          <nav class="sidenav" aria-label="Workspace">
            <ul>
              {NAV.map(([slug, label]) => {
                const href = `/w/${ws}/${slug}`;
                const active = path === href || path.startsWith(`${href}/`);
                return <li key={slug}><Link href={href} aria-current={active ? "page" : undefined} class={active ? "active" : ""}>{label}</Link></li>;
              })}
            </ul>
          </nav>
        )}
        <main id="main" class="content">
          <Page path={path} />
        </main>
      </div>
      <LiveRegion />
    </div>
  );
}

function WorkspaceSwitcher({ ws }: { ws: string }) {
  const { data } = useApi<{ items: Workspace[] }>("/workspaces");
  const items = data?.items || [];
  const section = location.pathname.split("/")[4] || "overview";
  return (
    <div class="switcher">
      <label for="ws-switch" class="sr-only">Workspace</label>
      <select id="ws-switch" value={ws} onChange={(e) => navigate(`/w/${(e.target as HTMLSelectElement).value}/${section}`)}>
        {!items.some((w) => w.id === ws) && <option value={ws}>{ws}</option>}
        {items.map((w) => <option key={w.id} value={w.id}>{w.name} ({w.id})</option>)}
      </select>
    </div>
  );
}

function Page({ path }: { path: string }): ComponentChildren {
  let m;
  if (path === "/" || path === "") return <Workspaces />;
  if ((m = match("/w/:ws", path))) { navigate(`/w/${m.ws}/overview`, true); return null; }
  if ((m = match("/w/:ws/overview", path))) return <OverviewPage ws={m.ws} />;
  if ((m = match("/w/:ws/runs", path))) return <Runs ws={m.ws} />;
  if ((m = match("/w/:ws/runs/:run", path))) return <RunTrace ws={m.ws} run={m.run} />;
  if ((m = match("/w/:ws/threads", path))) return <Threads ws={m.ws} />;
  if ((m = match("/w/:ws/threads/:thread", path))) return <Thread ws={m.ws} thread={m.thread} />;
  if ((m = match("/w/:ws/schedules", path))) return <Schedules ws={m.ws} />;
  if ((m = match("/w/:ws/agents", path))) return <AgentsPage ws={m.ws} />;
  if ((m = match("/w/:ws/feedback", path))) return <FeedbackPage ws={m.ws} />;
  if ((m = match("/w/:ws/evals", path))) return <EvalsPage ws={m.ws} />;
  if ((m = match("/w/:ws/ledger", path))) return <Ledger ws={m.ws} />;
  if ((m = match("/w/:ws/requests", path))) return <Requests ws={m.ws} />;
  if ((m = match("/w/:ws/identify", path))) return <Identify ws={m.ws} />;
  if ((m = match("/w/:ws/settings", path))) return <Settings ws={m.ws} tab="general" />;
  if ((m = match("/w/:ws/settings/agents", path))) { navigate(`/w/${m.ws}/agents`, true); return null; }
  if ((m = match("/w/:ws/settings/:tab", path))) return <Settings ws={m.ws} tab={m.tab} />;
  if ((m = match("/w/:ws/agents/:agent", path))) return <AgentPage ws={m.ws} agent={m.agent} />;
  return (
    <div class="narrow">
      <h1 id="page-title" tabIndex={-1}>Page not found</h1>
      <p>The console has no page at <code>{location.pathname}</code>. <Link href="/">Back to workspaces</Link>.</p>
    </div>
  );
}
