// The credits ledger: balance, a chart of the balance over time, the entries, and granting credits.
import { useState } from "preact/hooks";
import { api } from "../api";
import { announce, Card, Empty, ErrorBox, Field, Loading, Notice, PageHead, useAction, useApi } from "../components";
import { credits, when } from "../format";
import { Link } from "../router";
import { BalanceChart } from "./chart";

type Obj = Record<string, any>;
interface Credits { balance_credits: number; ledger: Obj[]; next_before: string | number | null; series: { at: string; balance_credits: number }[] }

export function Ledger({ ws }: { ws: string }) {
  const { data, error, loading, setData } = useApi<Credits>(`/workspaces/${ws}/credits?limit=50`);
  const [older, setOlder] = useState<Obj[]>([]);
  const [before, setBefore] = useState<string | number | null | undefined>(undefined);
  const [amount, setAmount] = useState("");
  const [notice, setNotice] = useState<string | null>(null);
  const grant = useAction(async () => {
    setNotice(null);
    const d = await api<Credits>("POST", `/workspaces/${ws}/credits`, { amount: Number(amount) });
    setData(d); setOlder([]); setBefore(undefined);
    setNotice(`Granted ${credits(Number(amount))} credits. The balance is now ${credits(d.balance_credits)}.`);
    setAmount("");
  });
  const more = useAction(async () => {
    const cursor = before === undefined ? data?.next_before : before;
    const d = await api<Credits>("GET", `/workspaces/${ws}/credits?limit=50&before=${encodeURIComponent(String(cursor))}`);
    setOlder((o) => [...o, ...d.ledger]); setBefore(d.next_before);
    announce(`${d.ledger.length} older entries loaded.`);
  });
  const nextCursor = before === undefined ? data?.next_before : before;
  const rows = data ? [...data.ledger, ...older] : [];
  return (
    <div>
      <PageHead title="Ledger" sub="Every grant and charge; the balance is their sum and never goes below zero." />
      <ErrorBox error={error} />
      {loading && !data && <Loading what="Loading the ledger" />}
      {data && (
        <>
          <div class="two-col two-col-wide">
            <Card title="Balance">
              <p class="big-number" data-testid="balance">{credits(data.balance_credits)} <span class="muted">credits</span></p>
              <BalanceChart series={data.series} />
            </Card>
            <Card title="Grant credits">
              <form onSubmit={(e) => { e.preventDefault(); grant.run(); }}>
                <Field label="Amount (credits)" hint="Adds a grant row to the ledger.">
                  {(id) => <input id={id} type="number" step="any" min="0" required value={amount} aria-describedby={`${id}-hint`}
                                  onInput={(e) => setAmount(e.currentTarget.value)} />}
                </Field>
                <button class="btn btn-primary" disabled={grant.busy}>Grant credits</button>
              </form>
              <ErrorBox error={grant.error} />
              <Notice message={notice} onClose={() => setNotice(null)} />
            </Card>
          </div>
          <Card title="Entries">
            {rows.length === 0 ? <Empty>No ledger entries yet.</Empty> : (
              <div class="table-wrap">
                <table class="table" aria-label="Ledger entries">
                  <thead><tr><th scope="col">When</th><th scope="col">Kind</th><th scope="col">Reason</th><th scope="col" class="num">Amount</th>
                    <th scope="col" class="num">Balance after</th><th scope="col">Run</th></tr></thead>
                  <tbody>
                    {rows.map((e) => (
                      <tr key={e.id}>
                        <td>{when(e.created_at)}</td>
                        <td><span class={`badge badge-${e.amount_credits >= 0 ? "green" : "grey"}`}>{e.kind}</span></td>
                        <td>{e.reason || "—"}{e.ref && <span class="mono muted small"> {e.ref}</span>}</td>
                        <td class={`num ${e.amount_credits >= 0 ? "pos" : "neg"}`}>{e.amount_credits >= 0 ? "+" : ""}{credits(e.amount_credits)}</td>
                        <td class="num">{credits(e.balance_after_credits)}</td>
                        <td>{e.run_id ? <Link href={`/w/${ws}/runs/${e.run_id}`} class="mono small">{e.run_id.slice(0, 8)}…</Link> : "—"}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            {nextCursor !== null && nextCursor !== undefined && <p><button type="button" class="btn" disabled={more.busy} onClick={() => more.run()}>Load older entries</button></p>}
            <ErrorBox error={more.error} />
          </Card>
        </>
      )}
    </div>
  );
}
