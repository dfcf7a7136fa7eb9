// The workspace picker, and creating a workspace.
import { useState } from "preact/hooks";
import { api } from "../api";
import { Card, Empty, ErrorBox, Field, Loading, PageHead, useAction, useApi } from "../components";
import { credits, when } from "../format";
import { Link, navigate } from "../router";

interface Workspace { id: string; name: string; balance_credits: number; created_at: string }

export function Workspaces() {
  const { data, error, loading } = useApi<{ items: Workspace[] }>("/workspaces");
  const [name, setName] = useState("");
  const [grant, setGrant] = useState("");
  const create = useAction(async () => {
    const body: Record<string, unknown> = { name };
    if (grant !== "") body.credits = Number(grant);
    const ws = await api<Workspace>("POST", "/workspaces", body);
    navigate(`/w/${ws.id}/settings`);
  });
  return (
    <div class="narrow">
      <PageHead title="Workspaces" sub="Choose a workspace to watch its runs, credits and settings." />
      {loading && !data && <Loading />}
      <ErrorBox error={error} />
      {data && (data.items.length === 0
        ? <Empty>No workspace yet. Create one below, or with <code>heddle workspace create --name …</code>.</Empty>
        : (
          <ul class="ws-list" aria-label="Workspaces">
            {data.items.map((w) => (
              <li key={w.id}>
                <Link href={`/w/${w.id}/overview`} class="ws-item">
                  <span class="ws-left"><span class="ws-name">{w.name}</span><span class="mono muted small">{w.id}</span></span>
                  <span class="ws-right"><span class="ws-balance">{credits(w.balance_credits)} credits</span>
                    <span class="muted small">Created {when(w.created_at)}</span></span>
                </Link>
              </li>
            ))}
          </ul>
        ))}
      <Card title="New workspace">
        <form class="form-row" onSubmit={(e) => { e.preventDefault(); create.run(); }}>
          <Field label="Name">{(id) => <input id={id} required value={name} onInput={(e) => setName(e.currentTarget.value)} />}</Field>
          <Field label="Starting credits (optional)">{(id) => <input id={id} type="number" min="0" step="any" value={grant} onInput={(e) => setGrant(e.currentTarget.value)} />}</Field>
          <div class="field field-button"><button class="btn btn-primary" disabled={create.busy}>Create workspace</button></div>
        </form>
        <ErrorBox error={create.error} />
      </Card>
    </div>
  );
}
