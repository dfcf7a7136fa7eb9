// The request log: every /v1 call of this workspace, with filters, newest first.
import { useEffect, useState } from "preact/hooks";
import { api, qs } from "../api";
import { Empty, ErrorBox, Loading, PageHead, StatusCode } from "../components";
import { localToIso, short, when } from "../format";
import { Link, setQuery, useLocation } from "../router";

type Obj = Record<string, any>;

export function Requests({ ws }: { ws: string }) {
  const { query } = useLocation();
  const f = { status: query.get("status") || "", path: query.get("path") || "", since: query.get("since") || "" };
  const [pathDraft, setPathDraft] = useState(f.path);
  const [statusDraft, setStatusDraft] = useState(f.status);
  const [rows, setRows] = useState<Obj[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const q = { status: f.status, path: f.path, since: localToIso(f.since) };
  const key = JSON.stringify(q);

  const load = async (more = false) => {
    try {
      const p = await api<{ items: Obj[]; next_cursor: string | null }>("GET",
        `/workspaces/${ws}/requests${qs({ ...q, limit: 50, cursor: more ? cursor : undefined })}`);
      setRows((old) => (more ? [...(old || []), ...p.items] : p.items)); setCursor(p.next_cursor); setError(null);
    } catch (e) { setError(e); }
  };
  useEffect(() => { setRows(null); load(); }, [ws, key]);
  const set = (patch: Partial<typeof f>) => setQuery({ ...f, ...patch });

  return (
    <div>
      <PageHead title="Request log" sub="The API calls made with this workspace's keys and session tokens."
        actions={<button type="button" class="btn btn-small" onClick={() => load()}>Refresh</button>} />
      <form class="filters" role="search" aria-label="Filter requests" onSubmit={(e) => { e.preventDefault(); set({ path: pathDraft.trim(), status: statusDraft }); }}>
        <div class="field">
          <label for="r-status">Status code</label>
          <input id="r-status" type="number" min="100" max="599" inputMode="numeric" list="r-status-codes" placeholder="e.g. 402"
                 class="status-input" value={statusDraft} onInput={(e) => setStatusDraft(e.currentTarget.value)}
                 onBlur={() => statusDraft !== f.status && set({ status: statusDraft })} />
          <datalist id="r-status-codes">
            {["200", "201", "202", "400", "401", "402", "403", "404", "409", "413", "429", "500", "503"].map((c) => <option key={c} value={c} />)}
          </datalist>
        </div>
        <div class="field">
          <label for="r-path">Path starts with</label>
          <input id="r-path" placeholder="/v1/identify" value={pathDraft} onInput={(e) => setPathDraft(e.currentTarget.value)}
                 onBlur={() => pathDraft.trim() !== f.path && set({ path: pathDraft.trim() })} />
        </div>
        <div class="field">
          <label for="r-since">Since</label>
          <input id="r-since" type="datetime-local" value={f.since} onChange={(e) => set({ since: e.currentTarget.value })} />
        </div>
        <div class="field field-button">
          <button class="btn">Apply</button>
          {(f.status || f.path || f.since) && <button type="button" class="btn btn-ghost" onClick={() => { setPathDraft(""); setStatusDraft(""); setQuery({}); }}>Clear</button>}
        </div>
      </form>
      <ErrorBox error={error} />
      {rows === null && !error && <Loading what="Loading requests" />}
      {rows && rows.length === 0 && <Empty>No requests match.</Empty>}
      {rows && rows.length > 0 && (
        <div class="table-wrap">
          <table class="table table-stack" aria-label="Requests">
            <thead><tr><th scope="col">When</th><th scope="col">Status</th><th scope="col">Request</th>
              <th scope="col" class="num">Latency</th><th scope="col">Caller</th><th scope="col">Run</th><th scope="col">Request id</th></tr></thead>
            <tbody>
              {rows.map((r, i) => (
                <tr key={r.id ?? r.request_id ?? i}>
                  <td>{when(r.created_at)}</td>
                  <td data-label="Status"><StatusCode status={r.status} /></td>
                  {/* One line per request: a long path is cut with an ellipsis, whole in its tooltip. */}
                  <td class="mono small req-path" title={`${r.method} ${r.path}`}><span class="req-method">{r.method}</span> {r.path}</td>
                  <td data-label="Latency" class="num nowrap">{Math.round(r.latency_ms ?? 0)} ms</td>
                  <td data-label="Caller" class="small nowrap">{r.auth_mode || "—"}{r.key_id && <span class="mono muted" title={r.key_id}> {short(r.key_id, 12)}</span>}</td>
                  <td data-label="Run">{r.run_id ? <Link href={`/w/${ws}/runs/${r.run_id}`} class="mono small">{short(r.run_id)}</Link> : "—"}</td>
                  <td data-label="Request id" class="mono small muted nowrap">{r.request_id}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {cursor && <p><button type="button" class="btn" onClick={() => load(true)}>Load older requests</button></p>}
    </div>
  );
}
