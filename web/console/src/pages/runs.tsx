// The runs list: filters in the URL, live updates by polling `updated_after` every 2 s.
import { useEffect, useRef, useState } from "preact/hooks";
import { api, qs, serverNow } from "../api";
import { announce, Badge, Empty, ErrorBox, Loading, PageHead, useApi } from "../components";
import { ago, credits, localToIso, short, when } from "../format";
import { Link, setQuery, useLocation } from "../router";

export interface RunRow {
  id: string; thread_id: string; agent_id: string; agent_version: number | null; subject: string; state: string;
  cost_credits: number; turn_count: number; error_code?: string | null; created_at: string; opened_at: string; closed_at: string | null; updated_at: string;
}
interface Page { items: RunRow[]; next_cursor: string | null }
interface Agent { id: string; name: string }

const STATES = ["running", "queued", "awaiting_input", "awaiting_outcome", "closed", "failed", "cancelled"];
const POLL_MS = 2000;

function order(a: RunRow, b: RunRow) {
  return (b.created_at || b.opened_at).localeCompare(a.created_at || a.opened_at) || b.id.localeCompare(a.id);
}

export function Runs({ ws }: { ws: string }) {
  const { query } = useLocation();
  const f = { state: query.get("state") || "", agent: query.get("agent") || "", subject: query.get("subject") || "",
              since: query.get("since") || "", until: query.get("until") || "", error_code: query.get("error_code") || "" };
  const [subjectDraft, setSubjectDraft] = useState(f.subject);
  const agents = useApi<{ items: Agent[] }>(`/workspaces/${ws}/agents`);
  const filterQuery = { state: f.state, agent: f.agent, subject: f.subject,
                        since: localToIso(f.since), until: localToIso(f.until), error_code: f.error_code };
  const key = JSON.stringify(filterQuery);

  const [rows, setRows] = useState<RunRow[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [live, setLive] = useState(true);
  const [fresh, setFresh] = useState<Set<string>>(new Set());
  const [lastPoll, setLastPoll] = useState<Date | null>(null);
  const watermark = useRef<string>("");

  // First page for the current filters.
  useEffect(() => {
    let gone = false;
    setRows(null); setError(null);
    api<Page>("GET", `/workspaces/${ws}/runs${qs({ ...filterQuery, limit: 50 })}`).then((p) => {
      if (gone) return;
      setRows(p.items); setCursor(p.next_cursor);
      watermark.current = p.items.reduce((m, r) => (r.updated_at > m ? r.updated_at : m), new Date(serverNow() - 2000).toISOString());
      setLastPoll(new Date());
    }).catch((e) => { if (!gone) setError(e); });
    return () => { gone = true; };
  }, [ws, key]);

  // Live: ask for what changed since the newest `updated_at` seen, merge it in.
  useEffect(() => {
    if (!live || rows === null) return;
    let gone = false;
    const tick = async () => {
      try {
        // Asked without the state filter, so that a run leaving the filtered state leaves the list.
        const p = await api<Page>("GET", `/workspaces/${ws}/runs${qs({ ...filterQuery, state: "", updated_after: watermark.current, limit: 100 })}`);
        if (gone) return;
        setError(null); setLastPoll(new Date());
        if (p.items.length === 0) return;
        for (const r of p.items) if (r.updated_at > watermark.current) watermark.current = r.updated_at;
        let added = 0;
        setRows((old) => {
          const byId = new Map((old || []).map((r) => [r.id, r]));
          for (const r of p.items) {
            if ((f.state && r.state !== f.state) || (f.error_code && r.error_code !== f.error_code)) { byId.delete(r.id); continue; }
            if (!byId.has(r.id)) added++;
            byId.set(r.id, r);
          }
          return [...byId.values()].sort(order);
        });
        setFresh(new Set(p.items.map((r) => r.id)));
        setTimeout(() => { if (!gone) setFresh(new Set()); }, 1800);
        announce(added ? `${added} new run${added > 1 ? "s" : ""}.` : `${p.items.length} run${p.items.length > 1 ? "s" : ""} updated.`);
      } catch (e) {
        if (!gone) setError(e);
      }
    };
    const t = setInterval(tick, POLL_MS);
    return () => { gone = true; clearInterval(t); };
  }, [ws, key, live, rows === null]);

  const more = async () => {
    if (!cursor) return;
    try {
      const p = await api<Page>("GET", `/workspaces/${ws}/runs${qs({ ...filterQuery, limit: 50, cursor })}`);
      setRows((old) => [...(old || []), ...p.items.filter((r) => !(old || []).some((o) => o.id === r.id))]);
      setCursor(p.next_cursor);
    } catch (e) { setError(e); }
  };

  const set = (patch: Partial<typeof f>) => setQuery({ ...f, ...patch });
  const agentName = (id: string) => agents.data?.items.find((a) => a.id === id)?.name;

  return (
    <div>
      <PageHead title="Runs" sub="Every agent run in this workspace, newest first."
        actions={
          <div class="live-toggle">
            <span class={live ? "dot dot-live" : "dot"} aria-hidden="true" />
            <span class="small muted" aria-live="off">{live ? `Live · checked ${lastPoll ? ago(lastPoll.toISOString()) : "—"}` : "Paused"}</span>
            <button type="button" class="btn btn-small" aria-pressed={live} onClick={() => setLive(!live)}>{live ? "Pause updates" : "Resume updates"}</button>
          </div>
        } />
      <form class="filters" role="search" aria-label="Filter runs" onSubmit={(e) => { e.preventDefault(); set({ subject: subjectDraft.trim() }); }}>
        <div class="field">
          <label for="f-state">State</label>
          <select id="f-state" value={f.state} onChange={(e) => set({ state: e.currentTarget.value })}>
            <option value="">Any state</option>
            {STATES.map((s) => <option key={s} value={s}>{s.replace(/_/g, " ")}</option>)}
          </select>
        </div>
        <div class="field">
          <label for="f-agent">Agent</label>
          <select id="f-agent" value={f.agent} onChange={(e) => set({ agent: e.currentTarget.value })}>
            <option value="">Any agent</option>
            {(agents.data?.items || []).map((a) => <option key={a.id} value={a.id}>{a.name}</option>)}
            {f.agent && !agents.data?.items.some((a) => a.id === f.agent) && <option value={f.agent}>{f.agent}</option>}
          </select>
        </div>
        <div class="field">
          <label for="f-subject">Subject</label>
          <input id="f-subject" placeholder="web:alice" value={subjectDraft} onInput={(e) => setSubjectDraft(e.currentTarget.value)}
                 onBlur={() => subjectDraft.trim() !== f.subject && set({ subject: subjectDraft.trim() })} />
        </div>
        <div class="field">
          <label for="f-since">From</label>
          <input id="f-since" type="datetime-local" value={f.since} onChange={(e) => set({ since: e.currentTarget.value })} />
        </div>
        <div class="field">
          <label for="f-until">To</label>
          <input id="f-until" type="datetime-local" value={f.until} onChange={(e) => set({ until: e.currentTarget.value })} />
        </div>
        <div class="field field-button">
          <button class="btn">Apply</button>
          {(f.state || f.agent || f.subject || f.since || f.until || f.error_code) &&
            <button type="button" class="btn btn-ghost" onClick={() => { setSubjectDraft(""); setQuery({}); }}>Clear</button>}
        </div>
      </form>
      {f.error_code && <p class="filter-note">Failed with <code>{f.error_code}</code>{" "}
        <button type="button" class="btn-link" onClick={() => set({ error_code: "" })}>Any failure code</button></p>}
      <ErrorBox error={error} />
      {rows === null && !error && <Loading what="Loading runs" />}
      {rows && rows.length === 0 && <Empty>No runs match. New runs appear here as they start.</Empty>}
      {rows && rows.length > 0 && (
        <div class="table-wrap">
          <table class="table table-stack" aria-label="Runs">
            <thead><tr><th scope="col">Run</th><th scope="col">State</th><th scope="col">Agent</th><th scope="col">Subject</th>
              <th scope="col" class="num">Turns</th><th scope="col" class="num">Cost</th><th scope="col">Started</th><th scope="col">Updated</th></tr></thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.id} class={fresh.has(r.id) ? "row-fresh" : ""} data-run={r.id}>
                  <td><Link href={`/w/${ws}/runs/${r.id}`} class="mono" aria-label={`Run ${r.id}`} title={r.id}>{short(r.id)}</Link></td>
                  <td data-label="State"><Badge value={r.state} />{r.error_code && <span class="small muted"> {r.error_code}</span>}</td>
                  <td data-label="Agent">{agentName(r.agent_id) || <span class="mono">{r.agent_id}</span>}{r.agent_version ? <span class="muted small"> v{r.agent_version}</span> : null}</td>
                  <td data-label="Subject" class="mono small">{r.subject}</td>
                  <td data-label="Turns" class="num">{r.turn_count}</td>
                  <td data-label="Cost" class="num">{credits(r.cost_credits)}</td>
                  <td data-label="Started" title={r.opened_at}>{when(r.opened_at)}</td>
                  <td data-label="Updated" class="muted small" title={r.updated_at}>{ago(r.updated_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {cursor && <p><button type="button" class="btn" onClick={more}>Load older runs</button></p>}
    </div>
  );
}
