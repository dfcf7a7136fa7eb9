// Feedback: end users' ratings of assistant answers, down-rated first, each linked to its run's
// trace; filters by agent, version and rating (in the URL).
import { useEffect, useState } from "preact/hooks";
import { api, qs } from "../api";
import { Badge, Empty, ErrorBox, Loading, PageHead, useApi } from "../components";
import { when } from "../format";
import { Link, setQuery, useLocation } from "../router";

type Obj = Record<string, any>;

export function FeedbackPage({ ws }: { ws: string }) {
  const { query } = useLocation();
  const f = { agent: query.get("agent") || "", version: query.get("version") || "", rating: query.get("rating") || "" };
  const agents = useApi<{ items: Obj[] }>(`/workspaces/${ws}/agents`);
  const [rows, setRows] = useState<Obj[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const key = JSON.stringify(f);
  useEffect(() => {
    let gone = false;
    setRows(null); setError(null);
    api<{ items: Obj[] }>("GET", `/workspaces/${ws}/feedback${qs({ ...f, limit: 200 })}`)
      .then((p) => { if (!gone) setRows(p.items); }).catch((e) => { if (!gone) setError(e); });
    return () => { gone = true; };
  }, [ws, key]);
  const names = new Map((agents.data?.items || []).map((a) => [a.id, a.name]));

  return (
    <div>
      <PageHead title="Feedback" sub="What end users said about the answers: thumbs down first. Open a run to see what the agent did." />
      <form class="filters" role="search" aria-label="Filter feedback" onSubmit={(e) => e.preventDefault()}>
        <div class="field">
          <label for="fb-agent">Agent</label>
          <select id="fb-agent" value={f.agent} onChange={(e) => setQuery({ ...f, agent: e.currentTarget.value, version: "" })}>
            <option value="">All agents</option>
            {(agents.data?.items || []).map((a) => <option key={a.id} value={a.id}>{a.name}</option>)}
          </select>
        </div>
        <div class="field">
          <label for="fb-version">Version</label>
          <input id="fb-version" type="number" min="1" value={f.version} onChange={(e) => setQuery({ ...f, version: e.currentTarget.value })} />
        </div>
        <div class="field">
          <label for="fb-rating">Rating</label>
          <select id="fb-rating" value={f.rating} onChange={(e) => setQuery({ ...f, rating: e.currentTarget.value })}>
            <option value="">Up and down</option><option value="down">Thumbs down</option><option value="up">Thumbs up</option>
          </select>
        </div>
      </form>
      <ErrorBox error={error} />
      {rows === null && !error && <Loading what="Loading feedback" />}
      {rows && rows.length === 0 && <Empty>No feedback matches.</Empty>}
      {rows && rows.length > 0 && (
        <div class="table-wrap">
          <table class="table table-stack" aria-label="Feedback">
            <thead><tr><th scope="col">Rating</th><th scope="col">Comment</th><th scope="col">Answer</th><th scope="col">Agent</th>
              <th scope="col">Subject</th><th scope="col">Run</th><th scope="col">When</th></tr></thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.message_id + r.subject} data-feedback={r.message_id}>
                  <td data-label="Rating"><Badge value={r.rating === "down" ? "thumbs down" : "thumbs up"} tone={r.rating === "down" ? "red" : "green"} /></td>
                  <td data-label="Comment">{r.comment || <span class="muted">none</span>}</td>
                  <td data-label="Answer" class="small">{(r.answer || "").slice(0, 200)}</td>
                  <td data-label="Agent"><Link href={`/w/${ws}/agents/${r.agent}`}>{names.get(r.agent) || r.agent}</Link> <span class="muted">v{r.agent_version}</span></td>
                  <td data-label="Subject" class="mono">{r.subject}</td>
                  <td data-label="Run">{r.run_id ? <Link href={`/w/${ws}/runs/${r.run_id}`} class="mono">trace</Link> : null}</td>
                  <td data-label="When">{when(r.updated_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
