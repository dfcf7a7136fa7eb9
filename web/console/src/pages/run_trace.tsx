// A run's trace as a timeline: state changes, model turns (tokens, cost), tool calls (args,
// result, outcome, attempts) and the API calls attributed to the run, in time order.
import type { ComponentChildren } from "preact";
import { useEffect } from "preact/hooks";
import { Badge, Card, ErrorBox, Loading, Markdown, PageHead, RawJson, StatusCode, useApi } from "../components";
import { ModelInput } from "./model_input";
import { credits, duration, short, when } from "../format";
import { Link } from "../router";
import { Attachments } from "../attachments";

type Obj = Record<string, any>;

interface Entry { at: string; order: number; key: string; node: ComponentChildren; kind: string }

// The console API answers the run with its trace merged in, or as {run, trace, requests}.
function normalise(data: Obj): { run: Obj; trace: Obj; requests: Obj[] } {
  // This run's messages (the console API gives them beside the trace): the user's come first.
  const run = data.run && typeof data.run === "object" ? { ...data.run } : { ...data };
  const trace = data.trace && typeof data.trace === "object" ? { ...run, ...data.trace } : run;
  if (data.state_changes) trace.state_changes = data.state_changes;
  if (data.messages) trace.messages = data.messages;
  // Hosted tool calls' HTTP attempts come beside the trace, by tool call id.
  const attempts: Record<string, Obj[]> = data.tool_attempts || {};
  trace.turns = (trace.turns || []).map((turn: Obj) => ({ ...turn, tool_calls: (turn.tool_calls || []).map(
    (c: Obj) => (attempts[c.id] && !c.attempts ? { ...c, attempts: attempts[c.id] } : c)) }));
  return { run, trace, requests: data.requests || trace.requests || [] };
}

export function RunTrace({ ws, run: runId }: { ws: string; run: string }) {
  const { data, error, loading, reload } = useApi<Obj>(`/workspaces/${ws}/runs/${runId}`);
  const n = data ? normalise(data) : null;
  const live = n && !n.trace.terminal && n.trace.state !== "closed" && n.trace.state !== "failed" && n.trace.state !== "cancelled";
  // A run still going: refresh its trace every 2 s until it ends.
  useEffect(() => {
    if (!live) return;
    const t = setInterval(reload, 2000);
    return () => clearInterval(t);
  }, [live, reload]);

  if (!data) return (
    <div>
      <p class="crumbs"><Link href={`/w/${ws}/runs`}>Runs</Link> <span aria-hidden="true">/</span> <span class="mono">{short(runId, 13)}</span></p>
      <PageHead title="Run trace" sub={<span class="mono">{runId}</span>} />
      {loading && <Loading what="Loading the trace" />}<ErrorBox error={error} />
    </div>
  );
  const { trace: t, requests } = n!;
  const turns: Obj[] = t.turns || [];
  const tokensIn = turns.reduce((s, x) => s + (x.input_tokens || 0), 0);
  const tokensOut = turns.reduce((s, x) => s + (x.output_tokens || 0), 0);
  const toolCalls = turns.flatMap((x) => x.tool_calls || []);
  const entries = timeline(t, requests, ws);

  return (
    <div>
      <p class="crumbs"><Link href={`/w/${ws}/runs`}>Runs</Link> <span aria-hidden="true">/</span> <span class="mono">{short(t.id, 13)}</span></p>
      <PageHead title="Run trace" sub={<span class="mono">{t.id}</span>}
        actions={live && <span class="small muted">Refreshing while it runs</span>} />
      <ErrorBox error={error} />
      <dl class="stats" aria-label="Run summary">
        <div><dt>State</dt><dd><Badge value={t.state} /></dd></div>
        <div><dt>Cost</dt><dd>{credits(t.cost_credits)} <span class="muted small">credits</span></dd></div>
        <div><dt>Turns</dt><dd>{turns.length}</dd></div>
        <div><dt>Tokens</dt><dd>{tokensIn} in · {tokensOut} out</dd></div>
        <div><dt>Tool calls</dt><dd>{toolCalls.length}</dd></div>
        <div><dt>Duration</dt><dd>{duration(t.opened_at || t.created_at, t.closed_at)}</dd></div>
      </dl>
      <dl class="meta">
        {t.agent_id && <><dt>Agent</dt><dd><Link href={`/w/${ws}/agents/${t.agent_id}`}>{data.agent?.name || t.agent_id}</Link>
          {t.agent_version ? ` · version ${t.agent_version}` : ""}</dd></>}
        {t.subject && <><dt>Subject</dt><dd class="mono">{t.subject}</dd></>}
        <dt>Thread</dt><dd><Link href={`/w/${ws}/threads/${t.thread_id}`} class="mono">{t.thread_id}</Link> (conversation)</dd>
        {t.connection && <><dt>Connection</dt><dd>{t.connection.name} <span class="mono muted small">{t.connection.id}</span></dd></>}
        <dt>Opened</dt><dd>{when(t.opened_at || t.created_at)}</dd>
        <dt>Closed</dt><dd>{when(t.closed_at)}</dd>
      </dl>
      {t.error && (
        <div class="alert alert-error"><strong>Failed: {t.error.code}</strong><p>{t.error.message}</p></div>
      )}
      {t.pending && <PendingBox pending={t.pending} />}
      <Card title="Timeline">
        <ol class="timeline" aria-label="Run timeline">
          {entries.map((e) => <li key={e.key} class={`tl tl-${e.kind}`}><span class="tl-dot" aria-hidden="true" /><div class="tl-body">{e.node}</div></li>)}
        </ol>
        {t.api_calls_total > (t.api_calls || []).length && requests.length === 0 &&
          <p class="muted small">Showing the latest {(t.api_calls || []).length} of {t.api_calls_total} API calls.</p>}
      </Card>
      <RawJson value={data} label="Raw JSON of this run" />
    </div>
  );
}

function PendingBox({ pending }: { pending: Obj }) {
  if (pending.type === "input") return <div class="alert alert-warn"><strong>Waiting for the user's answer:</strong> {pending.question}</div>;
  return (
    <div class="alert alert-warn">
      <strong>Waiting for {pending.type === "approval" ? "an approval" : "the caller to report an outcome"}</strong> of
      {" "}{(pending.tool_calls || []).map((c: Obj) => c.name).join(", ") || "a tool call"}.
    </div>
  );
}

function timeline(t: Obj, requests: Obj[], ws: string): Entry[] {
  const out: Entry[] = [];
  const opened = t.opened_at || t.created_at;
  openedAt = opened ? new Date(opened).getTime() : 0;
  out.push({ at: opened, order: 0, key: "open", kind: "state", node: <Head title="Run opened" at={opened}><Badge value="running" /></Head> });
  // What the user wrote: the run's opening message first, then any answer given while it waited.
  (t.messages || []).filter((m: Obj) => m.role === "user").forEach((m: Obj, i: number) => {
    out.push({ at: i === 0 && opened && m.created_at > opened ? opened : m.created_at, order: i === 0 ? -1 : 1.5,
      key: `msg-${m.id}`, kind: "user", node: (
        <div>
          <Head title={i === 0 ? "The user wrote" : "The user answered"} at={m.created_at} />
          <div class="user-says"><Markdown text={m.content} /><Attachments ws={ws} items={m.attachments} /></div>
        </div>) });
  });
  // State changes, when the API gives them (run events), each a row.
  const changes: Obj[] = t.state_changes || t.events?.filter((e: Obj) => e.type === "run.updated").map((e: Obj) => ({ state: e.data?.state, at: e.created_at })) || [];
  let prev = "running"; // "Run opened" already says so; the closing entry says how it ended
  const TERMINAL = ["closed", "failed", "cancelled"];
  changes.forEach((c, i) => {
    if (!c.state || c.state === prev || (t.closed_at && TERMINAL.includes(c.state))) return;
    prev = c.state;
    out.push({ at: c.at, order: 1, key: `st${i}`, kind: "state", node: <Head title="State changed" at={c.at}><Badge value={c.state} /></Head> });
  });
  for (const [what, v] of Object.entries(t.control || {})) {
    const note = v as Obj;
    const at = note?.at || note?.created_at;
    if (!at) continue;
    out.push({ at, order: 1, key: `ctl-${what}`, kind: "state", node: (
      <Head title={`Run ${what.replace(/_/g, " ")}`} at={at}>
        {note.by && <span class="muted small">by {note.by.mode}{note.by.key_id ? ` key ${note.by.key_id}` : ""}{note.by.subject ? ` ${note.by.subject}` : ""}</span>}
        {note.reason && <span class="small"> — {note.reason}</span>}
      </Head>) });
  }
  (t.turns || []).forEach((turn: Obj) => {
    out.push({ at: turn.created_at, order: 2, key: `turn${turn.seq}`, kind: "turn", node: <Turn turn={turn} /> });
  });
  const calls = requests.length ? requests : (t.api_calls || []);
  calls.forEach((c: Obj, i: number) => {
    out.push({ at: c.created_at, order: 3, key: `req${c.id ?? c.request_id ?? i}`, kind: "request", node: (
      <div class="tl-head">
        <span class="tl-title">API call</span>
        <StatusCode status={c.status} />
        <span class="mono small">{c.method} {c.path}</span>
        <span class="muted small">{Math.round(c.latency_ms ?? 0)} ms · {c.auth_mode || "—"}</span>
        {c.request_id && <span class="mono muted small" title="Request-Id">{c.request_id.slice(0, 12)}…</span>}
        <Stamp at={c.created_at} />
      </div>) });
  });
  if (t.closed_at) {
    out.push({ at: t.closed_at, order: 9, key: "close", kind: t.state === "failed" ? "fail" : "state", node: (
      <Head title={t.state === "failed" ? "Run failed" : `Run ${t.state}`} at={t.closed_at}>
        <Badge value={t.state} />{t.error && <span class="small"> {t.error.code}: {t.error.message}</span>}
      </Head>) });
  }
  void ws;
  const sorted = out.filter((e) => e.at).sort((a, b) => a.at.localeCompare(b.at) || a.order - b.order);
  // The closing entry ends the timeline: the last turn is stamped inside the same closing step.
  const close = sorted.findIndex((e) => e.key === "close");
  if (close >= 0) sorted.push(sorted.splice(close, 1)[0]);
  return sorted;
}

let openedAt = 0; // set per render of a trace: timeline times show "+n ms" from the opening

function Stamp({ at }: { at: string }) {
  const t = new Date(at).getTime();
  const off = openedAt && t >= openedAt ? t - openedAt : null;
  return (
    <time class="tl-time" dateTime={at} title={when(at)}>
      {clock(at)}{off !== null && <span class="muted"> · +{off < 1000 ? `${off} ms` : `${(off / 1000).toFixed(2)} s`}</span>}
    </time>
  );
}

function clock(at: string): string {
  const d = new Date(at);
  return d.toLocaleTimeString("en-GB", { hour: "2-digit", minute: "2-digit", second: "2-digit" }) + "." + String(d.getMilliseconds()).padStart(3, "0");
}

function Head({ title, at, children }: { title: string; at: string; children?: ComponentChildren }) {
  return <div class="tl-head"><span class="tl-title">{title}</span>{children}<Stamp at={at} /></div>;
}

function Turn({ turn }: { turn: Obj }) {
  const text: string | undefined = turn.response?.text;
  return (
    <div>
      <Head title={`Model turn ${turn.seq}`} at={turn.created_at}>
        <span class="chip">{turn.model_class}</span>
        <span class="small">{turn.input_tokens} tokens in · {turn.output_tokens} out</span>
        <span class="small"><strong>{credits(turn.cost_credits)}</strong> credits</span>
      </Head>
      {text && <blockquote class="reply"><Markdown text={text} /></blockquote>}
      {(turn.tool_calls || []).map((c: Obj) => <ToolCall key={c.id} call={c} />)}
      <ModelInput request={turn.request || {}} open={turn.seq === 1} />
      <RawJson value={{ request: turn.request, response: turn.response }} label="Model request and response" />
    </div>
  );
}

// A tool call's kind, when it is not the default signed-HTTP tool.
const KIND_WORDS: Record<string, string> = { mcp: "MCP", identify: "built-in", ask: "question", unknown: "unknown tool" };

function ToolCall({ call }: { call: Obj }) {
  const attempts: Obj[] = call.attempts || [];
  return (
    <div class="toolcall" aria-label={`Tool call ${call.name}`}>
      <div class="tc-head">
        <span class="tc-name">{call.name}</span>
        {call.kind && call.kind !== "hosted" && <span class="muted small tc-kind" title="What carried the call out">{KIND_WORDS[call.kind] || call.kind}</span>}
        <Badge value={call.status} />
        <span class="muted small">{[call.interaction, call.risk && `${call.risk} risk`, call.reliability].filter(Boolean).join(" · ")}</span>
        <span class="small"><strong>{credits(call.cost_credits)}</strong> credits</span>
      </div>
      <div class="tc-grid">
        <div><h4>Arguments</h4><KeyValues value={call.args} /></div>
        <div><h4>Result</h4>{call.result === null || call.result === undefined ? <p class="muted small">No result yet.</p> : <KeyValues value={call.result} />}</div>
      </div>
      {call.patch_ref && <p class="small">Tool host reference: <span class="mono">{call.patch_ref}</span></p>}
      {call.outcome && (
        <p class="small">Outcome: <Badge value={call.outcome.state} /> {when(call.outcome.created_at)}
          {call.outcome.detail && Object.keys(call.outcome.detail).length > 0 && <span class="mono"> {JSON.stringify(call.outcome.detail)}</span>}</p>
      )}
      {call.approval && <Approval approval={call.approval} />}
      {attempts.length > 0 && (
        <div><h4>Attempts</h4>
          <ol class="attempts">{attempts.map((a, i) => (
            <li key={i} class="small">
              {a.started_at && <span>{clock(a.started_at)} </span>}
              {a.duration_ms !== undefined && <span class="muted">· {a.duration_ms} ms </span>}
              {a.http_status !== undefined && <span>· HTTP <StatusCode status={a.http_status} /> </span>}
              {a.mcp_status !== undefined && <span>· MCP {a.mcp_status.replace("_", " ")} </span>}
              {a.in_flight && <span class="badge badge-amber">in flight</span>}
              {a.error && <span class="neg-text">· {a.error.message || a.error.code || JSON.stringify(a.error)}</span>}
            </li>
          ))}</ol>
        </div>
      )}
    </div>
  );
}

// What the approval step decided, in words: whether one was needed (and the rule's reason), who
// answered, how and when; the raw object stays in the run's Raw JSON.
function Approval({ approval }: { approval: Obj }) {
  if (!approval.required) {
    return <p class="small">Approval: not needed{approval.why ? ` (${approval.why})` : ""}.</p>;
  }
  const by: Obj = approval.by || {};
  const who = [by.subject || by.key_id, by.mode && `${by.mode} mode`].filter(Boolean).join(", ");
  const answered = approval.approved === true ? "Approved" : approval.approved === false ? "Denied" : null;
  return (
    <p class="small approval">
      Approval required{approval.why ? ` because ${approval.why}` : ""}
      {approval.requested_at && <span class="muted"> (asked {clock(approval.requested_at)})</span>}.{" "}
      {answered ? (
        <span>
          <Badge value={answered.toLowerCase()} /> {who && `by ${who}`} {approval.at && `at ${clock(approval.at)}`}
          {approval.reason && `: “${approval.reason}”`}
        </span>
      ) : <Badge value="waiting" />}
    </p>
  );
}

// A readable view of a JSON object: one row per key; nested objects nest (two levels), lists of
// plain values read as a comma list, anything deeper as compact JSON.
export function KeyValues({ value, depth = 0 }: { value: unknown; depth?: number }) {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return <pre class="code small">{JSON.stringify(value, null, 2)}</pre>;
  }
  const entries = Object.entries(value as Obj);
  if (entries.length === 0) return <p class="muted small">(none)</p>;
  return (
    <dl class={depth ? "kv kv-nested" : "kv"}>
      {entries.map(([k, v]) => <div key={k}><dt>{k}</dt><dd>{plain(v, depth)}</dd></div>)}
    </dl>
  );
}

function plain(v: unknown, depth: number): ComponentChildren {
  if (v === null || v === undefined) return <span class="muted">null</span>;
  if (Array.isArray(v) && v.every((x) => x === null || typeof x !== "object")) return v.length ? v.join(", ") : <span class="muted">(empty)</span>;
  if (typeof v === "object" && !Array.isArray(v) && depth < 2) return <KeyValues value={v} depth={depth + 1} />;
  if (typeof v === "object") return <span class="mono small">{JSON.stringify(v)}</span>;
  return String(v);
}
