// Schedules (issue 45): every schedule of the workspace, or of one thread, with pause, resume and
// delete. A schedule paused for credits resumes by itself once the workspace has credits again.
import { api } from "../api";
import { Badge, Card, Empty, ErrorBox, Loading, PageHead, useAction, useApi } from "../components";
import { short, when } from "../format";
import { Link } from "../router";

type Obj = Record<string, any>;

function timing(s: Obj): string {
  if (s.cron) return `cron ${s.cron} (${s.timezone})${s.max_runs ? `, at most ${s.max_runs} runs` : ""}${s.ends_at ? `, until ${when(s.ends_at)}` : ""}`;
  return `once, ${when(s.at)}`;
}

export function ScheduleList({ ws, thread }: { ws: string; thread?: string }) {
  const path = `/workspaces/${ws}/schedules${thread ? `?thread=${encodeURIComponent(thread)}` : ""}`;
  const { data, error, loading, reload } = useApi<{ items: Obj[] }>(path);
  const act = useAction(async (id: string, what: "pause" | "resume" | "delete") => {
    if (what === "delete") await api("DELETE", `/workspaces/${ws}/schedules/${id}`);
    else await api("POST", `/workspaces/${ws}/schedules/${id}/${what}`);
    await reload();
  });
  if (!data) return <>{loading && <Loading what="Loading the schedules" />}<ErrorBox error={error} /></>;
  if (data.items.length === 0) return <Empty>No schedules.</Empty>;
  return (
    <>
      <ErrorBox error={act.error} />
      <table class="table" aria-label="Schedules">
        <thead><tr><th scope="col">Message</th><th scope="col">When</th><th scope="col">State</th><th scope="col">Next</th>
          <th scope="col">Runs</th>{!thread && <th scope="col">Thread</th>}<th scope="col">Made by</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
        <tbody>
          {data.items.map((s) => (
            <tr key={s.id}>
              <td>{s.content}</td>
              <td class="small">{timing(s)}</td>
              <td><Badge value={s.state} />{s.paused_reason && <span class="small muted"> {s.paused_reason === "insufficient_credits" ? "out of credits" : "by an operator"}</span>}
                {s.last_error && <div class="small">last firing: {s.last_error.code}</div>}</td>
              <td class="small">{s.next_run_at ? when(s.next_run_at) : "—"}</td>
              <td>{s.runs}{s.last_run?.run_id && <> · <Link href={`/w/${ws}/runs/${s.last_run.run_id}`} class="small">last run</Link></>}</td>
              {!thread && <td><Link href={`/w/${ws}/threads/${s.thread_id}`} class="mono">{short(s.thread_id)}</Link> <span class="small muted">{s.subject}</span></td>}
              <td class="small">{s.created_by.kind === "agent" ? "the agent" : "the caller"}</td>
              <td class="actions">
                {s.state === "active" && <button type="button" class="btn btn-small" disabled={act.busy} onClick={() => act.run(s.id, "pause")}>Pause</button>}
                {s.state === "paused" && <button type="button" class="btn btn-small" disabled={act.busy} onClick={() => act.run(s.id, "resume")}>Resume</button>}
                <button type="button" class="btn btn-danger btn-small" disabled={act.busy}
                  onClick={() => { if (confirm("Delete this schedule? It will never fire again.")) act.run(s.id, "delete"); }}>Delete</button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

export function Schedules({ ws }: { ws: string }) {
  return (
    <div>
      <PageHead title="Schedules" sub="Messages the workspace's threads receive later: once, or on a cron." />
      <Card><ScheduleList ws={ws} /></Card>
    </div>
  );
}
