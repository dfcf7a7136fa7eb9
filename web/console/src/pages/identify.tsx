// The Identify playground: a form, and the answer as a card (charged like any API call).
import { useState } from "preact/hooks";
import { api } from "../api";
import { Badge, Card, ErrorBox, Field, PageHead, RawJson, useAction } from "../components";
import { when } from "../format";
import { Link } from "../router";

type Obj = Record<string, any>;
const RAILS = ["swift", "iban", "routing_number", "sort_code", "ifsc", "nuban", "momo", "gh_bank"];
// One-click examples, one per rail: each identifies against the data Heddle ships
// (tests/console/test_identify_examples.py posts each one).
interface Example { identifier: string; rail: string }
const EXAMPLES: Example[] = [{identifier: "DEUTDEFF", rail: "swift"}, {identifier: "GB29NWBK60161331926819", rail: "iban"}, {identifier: "021000021", rail: "routing_number"}, {identifier: "HDFC0000001", rail: "ifsc"}, {identifier: "60-83-71", rail: "sort_code"}];

export function Identify({ ws }: { ws: string }) {
  const [identifier, setIdentifier] = useState("");
  const [rail, setRail] = useState("");
  const [country, setCountry] = useState("");
  const [account, setAccount] = useState("");
  const [result, setResult] = useState<Obj | null>(null);
  const go = useAction(async () => {
    const body: Obj = { identifier: identifier.trim() };
    if (rail) body.rail = rail;
    if (country.trim()) body.country = country.trim().toUpperCase();
    if (account.trim()) body.account_number = account.trim();
    setResult(null);
    setResult(await api<Obj>("POST", `/workspaces/${ws}/identify`, body));
  });
  return (
    <div>
      <PageHead title="Identify" sub={<>Try a lookup as <code>POST /v1/identify</code> answers it. An <em>identified</em> result is charged to this workspace (see the <Link href={`/w/${ws}/ledger`}>ledger</Link>).</>} />
      <div class="two-col">
        <Card title="Lookup">
          <form onSubmit={(e) => { e.preventDefault(); go.run(); }}>
            <Field label="Identifier" hint="A BIC, IBAN, routing number, sort code, IFSC, bank code or wallet number.">
              {(id) => <input id={id} required class="mono" value={identifier} aria-describedby={`${id}-hint`} onInput={(e) => setIdentifier(e.currentTarget.value)} />}
            </Field>
            <p class="small muted">Examples: {EXAMPLES.map((x, i) => <>{i > 0 && ", "}<button type="button" class="btn-link mono" title={x.rail.replace(/_/g, " ")} onClick={() => { setIdentifier(x.identifier); setRail(""); }}>{x.identifier}</button></>)}</p>
            <div class="form-row">
              <Field label="Rail (optional)">
                {(id) => <select id={id} value={rail} onChange={(e) => setRail(e.currentTarget.value)}>
                  <option value="">Detect</option>{RAILS.map((r) => <option key={r} value={r}>{r.replace(/_/g, " ")}</option>)}</select>}
              </Field>
              <Field label="Country (optional)">
                {(id) => <input id={id} maxLength={2} placeholder="DE" class="short-input" value={country} onInput={(e) => setCountry(e.currentTarget.value)} />}
              </Field>
            </div>
            <Field label="Account number (optional)">
              {(id) => <input id={id} class="mono" value={account} onInput={(e) => setAccount(e.currentTarget.value)} />}
            </Field>
            <button class="btn btn-primary" disabled={go.busy}>{go.busy ? "Looking up…" : "Identify"}</button>
          </form>
        </Card>
        <div aria-live="polite">
          <ErrorBox error={go.error} title="Lookup refused" />
          {result && <ResultCard r={result} />}
          {!result && !go.error && <div class="empty">The result appears here.</div>}
        </div>
      </div>
    </div>
  );
}

function ResultCard({ r }: { r: Obj }) {
  const inst = r.institution;
  return (
    <Card class="result-card" title={<>Result <Badge value={r.result} tone={r.result === "identified" ? "green" : "amber"} /></>}>
      {inst ? (
        <>
          <p class="inst-name">{inst.name}</p>
          <p class="muted">{inst.type}{inst.address?.city ? ` · ${inst.address.city}` : ""}{inst.address?.country ? `, ${inst.address.country}` : ""}</p>
        </>
      ) : <p>{r.detail || "No institution was identified."}</p>}
      <dl class="kv">
        <div><dt>Rail</dt><dd>{String(r.rail).replace(/_/g, " ")}</dd></div>
        {r.country && <div><dt>Country</dt><dd>{r.country}</dd></div>}
        {inst?.code && <div><dt>Code</dt><dd class="mono">{inst.code}</dd></div>}
        {inst?.bic && <div><dt>BIC</dt><dd class="mono">{inst.bic}</dd></div>}
        {r.reachable_rails && <div><dt>Reachable rails</dt><dd>{r.reachable_rails.join(", ")}</dd></div>}
        {r.account && <div><dt>Account</dt><dd><span class="mono">{r.account.number}</span> {r.account.name || ""} <span class="muted small">({r.account.name_resolution?.replace(/_/g, " ")})</span></dd></div>}
        {r.identified_at && <div><dt>Identified at</dt><dd>{when(r.identified_at)}</dd></div>}
        {inst && r.detail && <div><dt>Note</dt><dd>{r.detail}</dd></div>}
      </dl>
      <RawJson value={r} />
    </Card>
  );
}
