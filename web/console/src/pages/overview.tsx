// A workspace at a glance (GET /console/api/workspaces/{ws}/overview): runs, failures by code,
// spend, run time and tokens by model class over the last day or week. Every figure links to
// the list it counts (the runs page filtered the same way, or the ledger).
import { Card, Empty, ErrorBox, Loading, PageHead, useApi } from "../components";
import { credits } from "../format";
import { Link, setQuery, useLocation } from "../router";

interface Overview {
  period: "day" | "week"; since: string; until: string;
  runs: { total: number; by_state: Record<string, number> };
  failures: { total: number; by_code: { code: string; count: number }[] };
  spend_credits: number;
  run_time_ms: { p50: number | null; p95: number | null; durations_sampled: number };
  tokens_by_model_class: { model_class: string; turns: number; input_tokens: number; output_tokens: number }[];
}

// The runs page's "From" filter takes the browser's local time (a datetime-local value).
function localMinute(iso: string): string {
  const d = new Date(iso);
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

function seconds(ms: number | null): string {
  if (ms === null) return "—";
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

const count = (n: number) => n.toLocaleString("en-US");

export function OverviewPage({ ws }: { ws: string }) {
  const { query } = useLocation();
  const period = query.get("period") === "week" ? "week" : "day";
  const { data, error, loading } = useApi<Overview>(`/workspaces/${ws}/overview?period=${period}`, [period]);
  const runs = (extra: Record<string, string> = {}) => {
    const p = new URLSearchParams({ since: data ? localMinute(data.since) : "", ...extra });
    return `/w/${ws}/runs?${p}`;
  };
  const label = period === "day" ? "the last 24 hours" : "the last 7 days";
  return (
    <div>
      <PageHead title="Overview" sub={`Runs of this workspace over ${label}.`}
        actions={
          <div class="segmented" role="group" aria-label="Period">
            <button type="button" class="btn btn-small" aria-pressed={period === "day"} onClick={() => setQuery({ period: "day" })}>Last day</button>
            <button type="button" class="btn btn-small" aria-pressed={period === "week"} onClick={() => setQuery({ period: "week" })}>Last week</button>
          </div>
        } />
      <ErrorBox error={error} />
      {loading && !data && <Loading what="Counting runs" />}
      {data && (
        <>
          <div class="stats" aria-label="At a glance">
            <Link class="stat" href={runs()}><span class="stat-value">{count(data.runs.total)}</span><span class="stat-label">runs</span></Link>
            <Link class={data.failures.total ? "stat stat-bad" : "stat"} href={runs({ state: "failed" })}>
              <span class="stat-value">{count(data.failures.total)}</span><span class="stat-label">failed</span></Link>
            <Link class="stat" href={`/w/${ws}/ledger`}><span class="stat-value">{credits(data.spend_credits)}</span><span class="stat-label">credits spent</span></Link>
            <Link class="stat" href={runs({ state: "closed" })}><span class="stat-value">{seconds(data.run_time_ms.p50)}</span><span class="stat-label">median run time</span></Link>
            <Link class="stat" href={runs({ state: "closed" })}><span class="stat-value">{seconds(data.run_time_ms.p95)}</span><span class="stat-label">p95 run time</span></Link>
          </div>
          {data.runs.total === 0 && <Empty>No runs in {label}. They appear here once an agent runs.</Empty>}
          <div class="grid-2">
            <Card title="Failures by code">
              {data.failures.by_code.length === 0 ? <p class="muted">No failed runs.</p> : (
                <table class="table" aria-label="Failures by code">
                  <thead><tr><th scope="col">Code</th><th scope="col" class="num">Runs</th></tr></thead>
                  <tbody>{data.failures.by_code.map((f) => (
                    <tr key={f.code} data-code={f.code}>
                      <td><Link href={runs({ state: "failed", error_code: f.code })} class="mono">{f.code}</Link></td>
                      <td class="num"><Link href={runs({ state: "failed", error_code: f.code })}>{count(f.count)}</Link></td>
                    </tr>))}</tbody>
                </table>)}
            </Card>
            <Card title="Runs by state">
              {Object.keys(data.runs.by_state).length === 0 ? <p class="muted">No runs.</p> : (
                <table class="table" aria-label="Runs by state">
                  <thead><tr><th scope="col">State</th><th scope="col" class="num">Runs</th></tr></thead>
                  <tbody>{Object.entries(data.runs.by_state).map(([state, n]) => (
                    <tr key={state}><td><Link href={runs({ state })}>{state.replace(/_/g, " ")}</Link></td>
                      <td class="num"><Link href={runs({ state })}>{count(n)}</Link></td></tr>))}</tbody>
                </table>)}
            </Card>
          </div>
          <Card title="Tokens by model class">
            {data.tokens_by_model_class.length === 0 ? <p class="muted">No model turns.</p> : (
              <div class="table-scroll">
                <table class="table" aria-label="Tokens by model class">
                  <thead><tr><th scope="col">Model class</th><th scope="col" class="num">Turns</th>
                    <th scope="col" class="num">Input tokens</th><th scope="col" class="num">Output tokens</th></tr></thead>
                  <tbody>{data.tokens_by_model_class.map((t) => (
                    <tr key={t.model_class}><td><Link href={runs()} class="mono">{t.model_class}</Link></td>
                      <td class="num">{count(t.turns)}</td><td class="num">{count(t.input_tokens)}</td>
                      <td class="num">{count(t.output_tokens)}</td></tr>))}</tbody>
                </table>
              </div>)}
          </Card>
          <p class="muted small">Run times are those of the {count(data.run_time_ms.durations_sampled)} runs of the
            period that ended (opened to closed). Spend is what those runs cost.</p>
        </>
      )}
    </div>
  );
}
