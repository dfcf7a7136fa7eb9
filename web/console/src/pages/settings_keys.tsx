// API keys: create (the secret is shown once, with a copy button) and revoke.
import { useState } from "preact/hooks";
import { api } from "../api";
import { Badge, Card, CopyButton, Empty, ErrorBox, Loading, Notice, useAction, useApi } from "../components";
import { when } from "../format";

type Obj = Record<string, any>;
// Stable, so it runs once when the confirm button appears (keyboard users land on it).
const focusOnMount = (el: HTMLButtonElement | null) => { el?.focus(); };

export function Keys({ ws }: { ws: string }) {
  const keys = useApi<{ items: Obj[] }>(`/workspaces/${ws}/keys`);
  const [mode, setMode] = useState("live");
  const [created, setCreated] = useState<{ id: string; secret: string } | null>(null);
  const [confirming, setConfirming] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const create = useAction(async () => {
    const k = await api<{ id: string; secret: string }>("POST", `/workspaces/${ws}/keys`, { mode });
    setCreated(k); keys.reload();
  });
  const revoke = useAction(async (id: string) => {
    setNotice(null);
    await api("DELETE", `/workspaces/${ws}/keys/${id}`);
    setConfirming(null); setNotice(`Key ${id} revoked. Requests with it now get 401.`); keys.reload();
  });
  return (
    <div>
      <Card title="Create a key">
        <form class="form-row" onSubmit={(e) => { e.preventDefault(); create.run(); }}>
          <div class="field field-narrow">
            <label for="k-mode">Mode</label>
            <select id="k-mode" value={mode} onChange={(e) => setMode(e.currentTarget.value)}>
              <option value="live">live (sk_live_…)</option><option value="test">test (sk_test_…)</option>
            </select>
          </div>
          <div class="field field-button"><button class="btn btn-primary" disabled={create.busy}>Create key</button></div>
        </form>
        <ErrorBox error={create.error} />
        {created && (
          <div class="secret-once" role="status">
            <p><strong>New key {created.id}.</strong> Copy the secret now: it is stored only as a hash and is never shown again.</p>
            <div class="secret-row"><code class="mono" data-testid="secret">{created.secret}</code><CopyButton text={created.secret} label="Copy secret" /></div>
            <button type="button" class="btn-link small" onClick={() => setCreated(null)}>I have stored it, hide it</button>
          </div>
        )}
      </Card>
      <Card title="Keys">
        <Notice message={notice} onClose={() => setNotice(null)} />
        <ErrorBox error={keys.error || revoke.error} />
        {keys.loading && !keys.data && <Loading />}
        {keys.data && (keys.data.items.length === 0 ? <Empty>No keys yet.</Empty> : (
          <table class="table" aria-label="API keys">
            <thead><tr><th scope="col">Key</th><th scope="col">Mode</th><th scope="col">Secret</th><th scope="col">Created</th><th scope="col">Status</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
            <tbody>
              {keys.data.items.map((k) => {
                const revoked = !!k.revoked_at || k.revoked;
                return (
                  <tr key={k.id} data-key={k.id}>
                    <td class="mono">{k.id}</td>
                    <td>{k.mode}</td>
                    <td class="mono small muted">{k.secret_hint || "hidden"}</td>
                    <td>{when(k.created_at)}</td>
                    <td>{revoked ? <><Badge value="revoked" /> <span class="small muted">{when(k.revoked_at)}</span></> : <Badge value="active" tone="green" />}</td>
                    <td class="actions-cell">
                      {!revoked && (confirming === k.id ? (
                        <span class="confirm">
                          <button type="button" class="btn btn-danger btn-small" disabled={revoke.busy} onClick={() => revoke.run(k.id)}
                                  ref={focusOnMount}>Revoke {k.id}</button>
                          <button type="button" class="btn btn-ghost btn-small" onClick={() => setConfirming(null)}>Cancel</button>
                        </span>
                      ) : <button type="button" class="btn btn-small" onClick={() => setConfirming(k.id)} aria-label={`Revoke key ${k.id}`}>Revoke…</button>)}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        ))}
      </Card>
    </div>
  );
}
