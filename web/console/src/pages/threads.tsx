// Threads: every conversation of the workspace (one per subject and agent), newest first, with
// its agent by name and how its latest run ended; filters by agent and subject.
import { useEffect, useState } from "preact/hooks";
import { api, qs } from "../api";
import { Badge, Empty, ErrorBox, Loading, PageHead } from "../components";
import { when } from "../format";
import { Link, setQuery, useLocation } from "../router";

type Obj = Record<string, any>;

export function Threads({ ws }: { ws: string }) {
  const { query } = useLocation();
  const f = { subject: query.get("subject") || "", agent: query.get("agent") || "" };
  const [subjectDraft, setSubjectDraft] = useState(f.subject);
  const [rows, setRows] = useState<Obj[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const key = JSON.stringify(f);

  const load = async (more = false) => {
    try {
      const p = await api<{ items: Obj[]; next_cursor: string | null }>("GET",
        `/workspaces/${ws}/threads${qs({ ...f, limit: 50, cursor: more ? cursor : undefined })}`);
      setRows((old) => (more ? [...(old || []), ...p.items] : p.items)); setCursor(p.next_cursor); setError(null);
    } catch (e) { setError(e); }
  };
  useEffect(() => { setRows(null); load(); }, [ws, key]);

  return (
    <div>
      <PageHead title="Threads" sub="Each person's conversation with an agent. Open one to read it and see its runs." />
      <form class="filters" role="search" aria-label="Filter threads" onSubmit={(e) => { e.preventDefault(); setQuery({ ...f, subject: subjectDraft.trim() }); }}>
        <div class="field">
          <label for="t-subject">Subject</label>
          <input id="t-subject" placeholder="web:alice" value={subjectDraft} onInput={(e) => setSubjectDraft(e.currentTarget.value)} />
        </div>
        <div class="field field-button">
          <button class="btn">Apply</button>
          {(f.subject || f.agent) && <button type="button" class="btn btn-ghost" onClick={() => { setSubjectDraft(""); setQuery({}); }}>Clear</button>}
        </div>
      </form>
      <ErrorBox error={error} />
      {rows === null && !error && <Loading what="Loading threads" />}
      {rows && rows.length === 0 && <Empty>No threads match.</Empty>}
      {rows && rows.length > 0 && (
        <div class="table-wrap">
          <table class="table table-stack" aria-label="Threads">
            <thead><tr><th scope="col">Subject</th><th scope="col">Agent</th><th scope="col">Latest run</th>
              <th scope="col">Last activity</th><th scope="col">Started</th></tr></thead>
            <tbody>
              {rows.map((t) => (
                <tr key={t.id} data-thread={t.id}>
                  <td><Link href={`/w/${ws}/threads/${t.id}`} class="mono">{t.subject}</Link></td>
                  <td data-label="Agent"><Link href={`/w/${ws}/agents/${t.agent}`}>{t.agent_name || t.agent}</Link></td>
                  <td data-label="Latest run">{t.latest_run ? <Link href={`/w/${ws}/runs/${t.latest_run.id}`}><Badge value={t.latest_run.state} /></Link> : <span class="muted">none</span>}</td>
                  <td data-label="Last activity">{when(t.latest_run?.updated_at || t.created_at)}</td>
                  <td data-label="Started">{when(t.created_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {cursor && <p><button type="button" class="btn" onClick={() => load(true)}>Load older threads</button></p>}
    </div>
  );
}
