// One agent: its definition, editing it as a new version, and its version history.
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { api } from "../api";
import { Card, ErrorBox, Loading, Notice, PageHead, RawJson, useAction, useApi } from "../components";
import { when } from "../format";
import { Link } from "../router";
import { Playground } from "./playground";
import { AgentEditor, agentBody } from "./agent_editor";

type Obj = Record<string, any>;

// The agent file as YAML (the server renders it: the console carries no YAML library), so an
// agent written in YAML is edited in YAML.
function definition(a: Obj): string {
  return a.yaml || "";
}

// A JSON Schema type in words: "number", "list of string", "one of a, b".
function typeOf(schema: Obj): string {
  if (!schema || typeof schema !== "object") return "any";
  if (Array.isArray(schema.enum)) return `one of ${schema.enum.map(String).join(", ")}`;
  if (schema.type === "array") return `list of ${typeOf(schema.items || {})}`;
  if (Array.isArray(schema.type)) return schema.type.join(" or ");
  return schema.type || "any";
}

function Parameters({ schema }: { schema: Obj | undefined }) {
  const props: [string, Obj][] = Object.entries(schema?.properties || {});
  if (props.length === 0) return <span class="muted">none</span>;
  const required = new Set<string>(schema?.required || []);
  return (
    <ul class="params">
      {props.map(([name, p]) => (
        <li key={name}><span class="mono">{name}</span> <span class="muted">{typeOf(p)}{required.has(name) ? ", required" : ", optional"}</span>
          {p.description && <span class="small"> — {p.description}</span>}</li>
      ))}
    </ul>
  );
}

const WORDS: Record<string, Record<string, string>> = {
  interaction: { auto: "runs by itself", approve: "asks the person first", confirm: "the person confirms the outcome" },
  reliability: { idempotent: "safe to retry", non_idempotent: "never retried" },
};

// An `mcp:` entry: which of its server's tools the agent may use, and the settings the file gives
// (what it leaves out, the server's annotations decide when a run lists the tools).
function McpDetails({ tool }: { tool: Obj }) {
  const rows: [string, ComponentChildren][] = [
    ["Tools", tool.tools === "*" || !tool.tools ? "every tool the server lists" : <span class="mono">{tool.tools.join(", ")}</span>],
  ];
  for (const [name, settings] of Object.entries((tool.settings || {}) as Record<string, Obj>)) {
    rows.push([name, Object.entries(settings).map(([k, v]) => WORDS[k]?.[v as string] || `${k}: ${v}`).join(" · ")]);
  }
  return <dl class="kv">{rows.map(([k, v]) => <div key={k}><dt>{k}</dt><dd>{v}</dd></div>)}</dl>;
}

function ToolDetails({ tool }: { tool: Obj }) {
  if (tool.builtin) return <span class="muted">Built into Heddle.</span>;
  if (tool.mcp) return <McpDetails tool={tool} />;
  const rows: [string, ComponentChildren][] = [];
  if (tool.description) rows.push(["Does", tool.description]);
  rows.push(["Parameters", <Parameters schema={tool.parameters} />]);
  if (tool.path) rows.push(["Calls", <span class="mono">{tool.connection ? `${tool.connection} ` : ""}{tool.path}</span>]);
  if (tool.risk) rows.push(["Risk", tool.risk]);
  for (const k of ["interaction", "reliability"]) if (tool[k]) rows.push([k[0].toUpperCase() + k.slice(1), WORDS[k][tool[k]] || tool[k]]);
  if (tool.approve_when) rows.push(["Asks when", <span class="mono">{typeof tool.approve_when === "string" ? tool.approve_when : JSON.stringify(tool.approve_when)}</span>]);
  return <dl class="kv">{rows.map(([k, v]) => <div key={k}><dt>{k}</dt><dd>{v}</dd></div>)}</dl>;
}

export function AgentPage({ ws, agent }: { ws: string; agent: string }) {
  const { data, error, loading, setData } = useApi<Obj>(`/workspaces/${ws}/agents/${agent}`);
  const [text, setText] = useState("");
  const [parseError, setParseError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [viewing, setViewing] = useState<Obj | null>(null);
  useEffect(() => { if (data) setText(definition(data)); }, [data?.id, data?.version]);

  const save = useAction(async () => {
    setNotice(null);
    const body = agentBody(text, setParseError);
    if (!body) return;
    await api<Obj>("PUT", `/workspaces/${ws}/agents/${agent}`, body);
    // Read it back for the version list.
    const fresh = await api<Obj>("GET", `/workspaces/${ws}/agents/${agent}`);
    setData(fresh); setViewing(null);
    setNotice(`Saved as version ${fresh.version}. New runs use it; earlier runs keep the version they ran.`);
  });
  const view = useAction(async (n: number) => setViewing(await api<Obj>("GET", `/workspaces/${ws}/agents/${agent}/versions/${n}`)));

  if (!data) return (
    <div>
      <p class="crumbs"><Link href={`/w/${ws}/agents`}>Agents</Link> <span aria-hidden="true">/</span> <span class="mono">{agent}</span></p>
      <PageHead title="Agent" sub={<span class="mono">{agent}</span>} />
      {loading && <Loading what="Loading the agent" />}<ErrorBox error={error} />
    </div>
  );
  const versions: Obj[] = [...(data.versions || [])].sort((a, b) => b.version - a.version);
  return (
    <div>
      <p class="crumbs"><Link href={`/w/${ws}/agents`}>Agents</Link> <span aria-hidden="true">/</span> {data.name}</p>
      <PageHead title={data.name} sub={<><span class="mono">{data.id}</span> · version {data.version ?? "—"} · {data.model_class}</>}
        actions={<Link class="btn" href={`/w/${ws}/runs?agent=${encodeURIComponent(data.id)}`}>See its runs</Link>} />
      <div class="two-col two-col-wide">
        <div>
          <Card title="Definition">
            <h3 class="sub">Instructions</h3>
            <p class="pre-wrap">{data.instructions || <span class="muted">(none)</span>}</p>
            <h3 class="sub">Tools</h3>
            {(data.tools || []).length === 0 ? <p class="muted">No tools.</p> : (
              <table class="table" aria-label="Tools">
                <thead><tr><th scope="col">Tool</th><th scope="col">Kind</th><th scope="col">Details</th></tr></thead>
                <tbody>{data.tools.map((t: Obj, i: number) => (
                  <tr key={i}><td class="mono">{t.name || t.builtin || t.mcp}</td>
                    <td>{t.builtin ? "built-in" : t.mcp ? "MCP server" : "hosted"}</td>
                    <td><ToolDetails tool={t} /></td></tr>))}
                </tbody>
              </table>
            )}
          </Card>
          <Card title="Edit (saves a new version)">
            <form onSubmit={(e) => { e.preventDefault(); save.run(); }}>
              <AgentEditor value={text} onInput={setText} parseError={parseError} label="Agent file (YAML)" />
              <div class="form-actions">
                <button class="btn btn-primary" disabled={save.busy}>{save.busy ? "Saving…" : "Save new version"}</button>
                <button type="button" class="btn btn-ghost" onClick={() => { setText(definition(data)); setParseError(null); }}>Reset</button>
              </div>
            </form>
            <ErrorBox error={save.error} title="Not saved" />
            <Notice message={notice} onClose={() => setNotice(null)} />
          </Card>
        </div>
        <div>
          <Card title="Version history">
            <ol class="versions" aria-label="Versions, newest first">
              {versions.map((v) => (
                <li key={v.version} class={v.version === data.version ? "current" : ""}>
                  <button type="button" class="btn-link" onClick={() => view.run(v.version)} aria-label={`Show version ${v.version}`}>Version {v.version}</button>
                  {v.version === data.version && <span class="badge badge-green">current</span>}
                  <div class="small muted">{when(v.created_at)}{v.created_by ? ` · ${v.created_by}` : ""}</div>
                </li>
              ))}
            </ol>
            <ErrorBox error={view.error} />
          </Card>
          <Card title="Playground">
            <Playground ws={ws} agent={agent} draftText={text} versions={versions.map((v) => v.version)} />
          </Card>
          {viewing && (
            <Card title={`Version ${viewing.version}`} actions={<button type="button" class="btn btn-small" onClick={() => { setText(definition(viewing)); }}>Load into editor</button>}>
              <pre class="code small">{definition(viewing)}</pre>
            </Card>
          )}
        </div>
      </div>
      <RawJson value={data} />
    </div>
  );
}
