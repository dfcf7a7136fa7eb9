// The playground beside the agent editor: chat with the editor's draft (unsaved) or a saved
// version as a test subject the operator names; the run's trace builds live (SSE) with its
// tokens, cost and tool calls; questions are answered by the next message, approvals in place.
import { useEffect, useRef, useState } from "preact/hooks";
import { api } from "../api";
import { Badge, ErrorBox } from "../components";
import { credits } from "../format";
import { Link } from "../router";
import { agentBody } from "./agent_editor";

type Obj = Record<string, any>;
interface Line { role: string; text: string; id?: string }

export function Playground({ ws, agent, draftText, versions }: { ws: string; agent: string; draftText: string; versions: number[] }) {
  const [subject, setSubject] = useState("operator");
  const [source, setSource] = useState("draft");
  const [input, setInput] = useState("");
  const [lines, setLines] = useState<Line[]>([]);
  const [run, setRun] = useState<Obj | null>(null);
  const [trace, setTrace] = useState<Obj | null>(null);
  const [events, setEvents] = useState<string[]>([]);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const stream = useRef<EventSource | null>(null);
  const runId = useRef<string | null>(null);
  useEffect(() => () => stream.current?.close(), []);

  const refreshTrace = async (id: string) => {
    try { setTrace((await api<Obj>("GET", `/workspaces/${ws}/runs/${id}`)).trace); } catch (e) { setError(e); }
  };
  const follow = (id: string) => {
    if (runId.current === id && stream.current) return;
    stream.current?.close();
    runId.current = id;
    setEvents([]);
    const es = new EventSource(`/console/api/workspaces/${ws}/playground/runs/${id}/events`);
    stream.current = es;
    es.addEventListener("message.delta", (e) => {
      const d = JSON.parse((e as MessageEvent).data);
      setLines((old) => {
        const last = old[old.length - 1];
        if (last && last.role === "assistant" && last.id === d.message_id) return [...old.slice(0, -1), { ...last, text: last.text + d.delta }];
        return [...old, { role: "assistant", text: d.delta, id: d.message_id }];
      });
    });
    es.addEventListener("message.created", (e) => {
      const m = JSON.parse((e as MessageEvent).data);
      if (m.role !== "assistant") return;
      setLines((old) => [...old.filter((l) => l.id !== m.id), { role: "assistant", text: m.content, id: m.id }]);
    });
    es.addEventListener("run.updated", (e) => {
      const r = JSON.parse((e as MessageEvent).data);
      setRun(r);
      setEvents((old) => [...old, `${r.state}${r.cost_credits ? ` · ${credits(r.cost_credits)} credits` : ""}`]);
      refreshTrace(r.id);
      if (r.terminal) { es.close(); if (stream.current === es) stream.current = null; }
    });
  };

  const send = async (e: Event) => {
    e.preventDefault();
    const content = input.trim();
    if (!content) return;
    setError(null); setBusy(true);
    try {
      const body: Obj = { subject, content };
      if (source === "draft") {
        const draft = agentBody(draftText, (m) => { if (m) throw new Error(m); });
        body.draft = draft;
      } else body.version = Number(source);
      const sent = await api<Obj>("POST", `/workspaces/${ws}/agents/${agent}/playground`, body);
      setLines((old) => [...old, { role: "user", text: content, id: sent.message_id }]);
      setInput("");
      follow(sent.run_id);
    } catch (err) { setError(err); } finally { setBusy(false); }
  };
  const approve = async (call: Obj, approved: boolean) => {
    try { await api("POST", `/workspaces/${ws}/playground/runs/${run!.id}/approval`, { tool_call_id: call.id, approved }); }
    catch (err) { setError(err); }
  };

  const turns: Obj[] = trace?.turns || [];
  return (
    <div class="playground" aria-label="Playground">
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <div class="field"><label for="pg-subject">Test subject</label>
          <input id="pg-subject" value={subject} onInput={(e) => setSubject(e.currentTarget.value)} /></div>
        <div class="field"><label for="pg-source">Talk to</label>
          <select id="pg-source" value={source} onChange={(e) => setSource(e.currentTarget.value)}>
            <option value="draft">The editor's draft (unsaved)</option>
            {versions.map((v) => <option key={v} value={String(v)}>Version {v}</option>)}
          </select></div>
      </form>
      <ol class="pg-log" aria-label="Playground conversation" aria-live="polite">
        {lines.map((l, i) => <li key={i} class={`pg-${l.role}`} data-role={l.role}><strong>{l.role === "user" ? "You" : "Agent"}:</strong> {l.text}</li>)}
      </ol>
      {run?.pending?.type === "input" && <p class="pg-question">The agent asks: <em>{run.pending.question}</em> (your next message answers it)</p>}
      {run?.pending?.type === "approval" && run.pending.tool_calls.map((c: Obj) => (
        <p key={c.id} class="pg-approval">Approve <code>{c.name}</code> {JSON.stringify(c.args)}?{" "}
          <button type="button" class="btn btn-small btn-primary" onClick={() => approve(c, true)}>Approve</button>{" "}
          <button type="button" class="btn btn-small" onClick={() => approve(c, false)}>Decline</button></p>))}
      <form class="pg-composer" onSubmit={send}>
        <label for="pg-input" class="sr-only">Message</label>
        <input id="pg-input" placeholder="Say something to the agent" value={input} onInput={(e) => setInput(e.currentTarget.value)} />
        <button class="btn btn-primary" disabled={busy}>Send</button>
      </form>
      <ErrorBox error={error} title="Not sent" />
      {run && (
        <section class="pg-trace" aria-label="Live trace" data-run={run.id}>
          <h3 class="sub">Trace <Badge value={run.state} /> <span class="muted">{credits(run.cost_credits)} credits · origin {run.origin}</span>{" "}
            <Link href={`/w/${ws}/runs/${run.id}`}>open</Link></h3>
          <ol class="pg-events small">{events.map((e, i) => <li key={i}>{e}</li>)}</ol>
          <table class="table small" aria-label="Turns">
            <thead><tr><th scope="col">Turn</th><th scope="col">Model</th><th scope="col">Tokens in/out</th><th scope="col">Credits</th><th scope="col">Tool calls</th></tr></thead>
            <tbody>{turns.map((t) => (
              <tr key={t.seq} data-turn={t.seq}><td>{t.seq}</td><td>{t.model_class}</td><td>{t.input_tokens}/{t.output_tokens}</td>
                <td>{credits(t.cost_credits)}</td><td>{t.tool_calls.map((c: Obj) => `${c.name} (${c.status})`).join(", ") || "none"}</td></tr>))}
            </tbody>
          </table>
        </section>
      )}
    </div>
  );
}
