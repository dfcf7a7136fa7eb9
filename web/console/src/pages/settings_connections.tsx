// Connections: the tool hosts an agent's unpinned or pinned tools are POSTed to (kind http),
// or the Model Context Protocol servers whose tools an agent may call (kind mcp).
import { useState } from "preact/hooks";
import { api } from "../api";
import { Card, Empty, ErrorBox, Field, Loading, Notice, useAction, useApi } from "../components";

type Obj = Record<string, any>;

export function Connections({ ws }: { ws: string }) {
  const list = useApi<{ items: Obj[] }>(`/workspaces/${ws}/connections`);
  const [name, setName] = useState("");
  const [url, setUrl] = useState("");
  const [kind, setKind] = useState("http");
  const [dev, setDev] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  const create = useAction(async () => {
    setNotice(null);
    const c = await api<Obj>("POST", `/workspaces/${ws}/connections`, { name: name.trim(), kind, base_url: url.trim(), ...(dev ? { dev: true } : {}) });
    setNotice(`Connection ${c.name} created.`); setName(""); setUrl(""); list.reload();
  });
  return (
    <div>
      <Card title="Connections">
        {list.loading && !list.data && <Loading />}
        <ErrorBox error={list.error} />
        {list.data && (list.data.items.length === 0 ? <Empty>No connections. Tools that call your servers need one.</Empty> : (
          <table class="table" aria-label="Connections">
            <thead><tr><th scope="col">Name</th><th scope="col">Kind</th><th scope="col">Base URL</th><th scope="col">Id</th></tr></thead>
            <tbody>{list.data.items.map((c) => <tr key={c.id}><td>{c.name}</td><td>{c.kind === "mcp" ? "MCP server" : "Signed HTTP"}</td><td class="mono small">{c.base_url}</td><td class="mono small muted">{c.id}</td></tr>)}</tbody>
          </table>
        ))}
      </Card>
      <Card title="New connection">
        <form onSubmit={(e) => { e.preventDefault(); create.run(); }}>
          <div class="form-row">
            <Field label="Name">{(id) => <input id={id} required value={name} onInput={(e) => setName(e.currentTarget.value)} />}</Field>
            <Field label="Kind">{(id) => (
              <select id={id} value={kind} onChange={(e) => setKind(e.currentTarget.value)}>
                <option value="http">Signed HTTP (tool paths follow the base URL)</option>
                <option value="mcp">MCP server (Streamable HTTP endpoint)</option>
              </select>
            )}</Field>
            <Field label={kind === "mcp" ? "MCP endpoint URL" : "Base URL"}>{(id) => <input id={id} required type="url" placeholder={kind === "mcp" ? "https://tools.example.com/mcp" : "https://tools.example.com"} value={url} onInput={(e) => setUrl(e.currentTarget.value)} />}</Field>
          </div>
          <div class="check">
            <input id="c-dev" type="checkbox" checked={dev} onChange={(e) => setDev(e.currentTarget.checked)} />
            <label for="c-dev">Development: allow plain http and private addresses</label>
          </div>
          <button class="btn btn-primary" disabled={create.busy}>Create connection</button>
        </form>
        <ErrorBox error={create.error} title="Not created" />
        <Notice message={notice} onClose={() => setNotice(null)} />
      </Card>
    </div>
  );
}
