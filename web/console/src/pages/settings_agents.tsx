// Agents: the list, and creating one from an agent file (YAML or JSON).
import { useState } from "preact/hooks";
import { api } from "../api";
import { Card, Empty, ErrorBox, Loading, PageHead, useAction, useApi } from "../components";
import { when } from "../format";
import { Link, navigate } from "../router";
import { AgentEditor, agentBody } from "./agent_editor";

type Obj = Record<string, any>;

export const TEMPLATE = `name: Payments helper
model_class: scripted
instructions: |
  You help customers check where their money goes.
tools:
  - builtin: identify
`;

export function AgentsPage({ ws }: { ws: string }) {
  return (
    <div>
      <PageHead title="Agents" sub="What each agent is told and which tools it may call. Every edit saves a new version." />
      <Agents ws={ws} />
    </div>
  );
}

export function Agents({ ws }: { ws: string }) {
  const list = useApi<{ items: Obj[] }>(`/workspaces/${ws}/agents`);
  const [text, setText] = useState(TEMPLATE);
  const [parseError, setParseError] = useState<string | null>(null);
  const create = useAction(async () => {
    const body = agentBody(text, setParseError);
    if (!body) return;
    const a = await api<Obj>("POST", `/workspaces/${ws}/agents`, body);
    navigate(`/w/${ws}/agents/${a.id}`);
  });
  return (
    <div>
      <Card title="All agents">
        {list.loading && !list.data && <Loading />}
        <ErrorBox error={list.error} />
        {list.data && (list.data.items.length === 0 ? <Empty>No agents yet. Create one below.</Empty> : (
          <table class="table" aria-label="Agents">
            <thead><tr><th scope="col">Name</th><th scope="col">Id</th><th scope="col">Model class</th><th scope="col" class="num">Version</th><th scope="col" class="num">Tools</th><th scope="col">Created</th></tr></thead>
            <tbody>{list.data.items.map((a) => (
              <tr key={a.id}>
                <td><Link href={`/w/${ws}/agents/${a.id}`}>{a.name}</Link></td>
                <td class="mono small">{a.id}</td>
                <td>{a.model_class}</td>
                <td class="num">{a.version ?? "—"}</td>
                <td class="num">{(a.tools || []).length}</td>
                <td>{when(a.created_at)}</td>
              </tr>))}
            </tbody>
          </table>
        ))}
      </Card>
      <Card title="New agent">
        <form onSubmit={(e) => { e.preventDefault(); create.run(); }}>
          <AgentEditor value={text} onInput={setText} parseError={parseError} label="Agent file (YAML)" />
          <button class="btn btn-primary" disabled={create.busy}>Create agent</button>
        </form>
        <ErrorBox error={create.error} title="Not created" />
      </Card>
    </div>
  );
}
