// Evals: the stored `heddle eval run` results; pick two to compare case by case (a case that
// passed on the first and fails on the second is a regression).
import { useEffect, useState } from "preact/hooks";
import { api } from "../api";
import { Badge, Empty, ErrorBox, Loading, PageHead, useApi } from "../components";
import { when } from "../format";
import { Link, setQuery, useLocation } from "../router";

type Obj = Record<string, any>;

function Verdict({ c }: { c: Obj | undefined }) {
  if (!c) return <span class="muted">not run</span>;
  return <Badge value={c.passed ? "pass" : "fail"} tone={c.passed ? "green" : "red"} />;
}

export function EvalsPage({ ws }: { ws: string }) {
  const { query } = useLocation();
  const a = query.get("a") || "", b = query.get("b") || "";
  const list = useApi<{ items: Obj[] }>(`/workspaces/${ws}/evals`);
  const [runs, setRuns] = useState<[Obj | null, Obj | null]>([null, null]);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    let gone = false;
    const get = (id: string) => (id ? api<Obj>("GET", `/workspaces/${ws}/evals/${id}`) : Promise.resolve(null));
    Promise.all([get(a), get(b)]).then((r) => { if (!gone) setRuns(r as [Obj | null, Obj | null]); }).catch((e) => { if (!gone) setError(e); });
    return () => { gone = true; };
  }, [ws, a, b]);
  const items = list.data?.items || [];
  const label = (e: Obj) => `${e.agent} v${e.version} · ${e.summary.passed} passed, ${e.summary.failed} failed · ${when(e.created_at)}`;
  const [first, second] = runs;
  const names = [...new Set([...(first?.cases || []), ...(second?.cases || [])].map((c: Obj) => c.name))];
  const byName = (run: Obj | null) => new Map((run?.cases || []).map((c: Obj) => [c.name, c]));
  const one = byName(first), two = byName(second);

  return (
    <div>
      <PageHead title="Evals" sub={<>Results of <code>heddle eval run</code>. Choose two runs (say, two versions of an agent) to compare them case by case.</>} />
      <ErrorBox error={list.error || error} />
      {list.loading && <Loading what="Loading evals" />}
      {!list.loading && items.length === 0 && <Empty>No evals yet: run <code>heddle eval run --workspace {ws} --agent … --dataset cases.jsonl</code>.</Empty>}
      {items.length > 0 && (
        <form class="filters" aria-label="Compare evals" onSubmit={(e) => e.preventDefault()}>
          <div class="field"><label for="ev-a">Before</label>
            <select id="ev-a" value={a} onChange={(e) => setQuery({ a: e.currentTarget.value, b })}>
              <option value="">Choose an eval</option>{items.map((e) => <option key={e.id} value={e.id}>{label(e)}</option>)}
            </select></div>
          <div class="field"><label for="ev-b">After</label>
            <select id="ev-b" value={b} onChange={(e) => setQuery({ a, b: e.currentTarget.value })}>
              <option value="">Choose an eval</option>{items.map((e) => <option key={e.id} value={e.id}>{label(e)}</option>)}
            </select></div>
        </form>
      )}
      {(first || second) && (
        <div class="table-wrap">
          <table class="table" aria-label="Cases compared">
            <thead><tr><th scope="col">Case</th><th scope="col">Before{first ? ` (v${first.version})` : ""}</th>
              <th scope="col">After{second ? ` (v${second.version})` : ""}</th><th scope="col">Failed checks (after)</th></tr></thead>
            <tbody>
              {names.map((n) => {
                const x = one.get(n) as Obj | undefined, y = two.get(n) as Obj | undefined;
                const regression = x?.passed && y && !y.passed;
                return (
                  <tr key={n} data-case={n} class={regression ? "regression" : ""}>
                    <td>{n}{regression && <> <Badge value="regression" tone="red" /></>}</td>
                    <td><Verdict c={x} /> {x?.trace && <Link href={x.trace}>trace</Link>}</td>
                    <td><Verdict c={y} /> {y?.trace && <Link href={y.trace}>trace</Link>}</td>
                    <td class="small">{(y?.checks || []).filter((c: Obj) => !c.passed).map((c: Obj) => `${c.expectation}: ${c.detail}`).join("; ")}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
