// What the model was given on one turn: the conversation as chat bubbles (its instructions, the
// earlier messages kept in the history budget, this run's messages, tool calls and results), with
// a badge saying how much history was kept and how much dropped (turn.request.history).
import type { ComponentChildren } from "preact";
import { Markdown } from "../components";

type Obj = Record<string, any>;

const ROLE_WORDS: Record<string, string> = {
  system: "Instructions", developer: "Instructions", user: "User", assistant: "Assistant", tool: "Tool result",
};

// A message's content as text: a string, or a provider's content blocks (text, tool use, tool result).
function contentText(content: unknown): string {
  if (content === null || content === undefined) return "";
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((block: Obj) => {
      if (typeof block === "string") return block;
      if (block?.type === "text") return block.text || "";
      if (block?.type === "tool_result") return contentText(block.content);
      if (block?.type === "tool_use") return "";
      return JSON.stringify(block);
    }).filter(Boolean).join("\n\n");
  }
  return JSON.stringify(content, null, 2);
}

function toolCallsOf(m: Obj): Obj[] {
  if (Array.isArray(m.tool_calls)) {
    return m.tool_calls.map((c: Obj) => ({ name: c.name || c.function?.name, arguments: c.arguments ?? c.function?.arguments }));
  }
  if (Array.isArray(m.content)) return m.content.filter((b: Obj) => b?.type === "tool_use").map((b: Obj) => ({ name: b.name, arguments: b.input }));
  return [];
}

function args(value: unknown): string {
  if (typeof value === "string") {
    try { return JSON.stringify(JSON.parse(value)); } catch { return value; }
  }
  return JSON.stringify(value ?? {});
}

/** "kept 12 messages (840 tokens), dropped 30 (budget 1,000 tokens)" from turn.request.history. */
export function HistoryBadge({ history }: { history: Obj | undefined }) {
  if (!history || typeof history !== "object" || history.budget_tokens === undefined) return null;
  const n = (v: number) => Number(v || 0).toLocaleString("en-US");
  const dropped = Number(history.dropped_messages || 0);
  return (
    <span class={`badge ${dropped ? "badge-amber" : "badge-grey"} history-badge`}
      title="Earlier messages of the thread given to the model, within the model class's history budget">
      kept {n(history.kept_messages)}, dropped {n(dropped)} (budget {n(history.budget_tokens)} tokens)
    </span>
  );
}

export function ModelInput({ request, open = false }: { request: Obj; open?: boolean }) {
  const messages: Obj[] = Array.isArray(request?.messages) ? request.messages : [];
  const system = typeof request?.system === "string" ? request.system : contentText(request?.system);
  const bubbles: ComponentChildren[] = [];
  if (system) bubbles.push(<Bubble key="system" role="system" text={system} />);
  messages.forEach((m, i) => {
    const calls = toolCallsOf(m);
    bubbles.push(
      <Bubble key={i} role={m.role} name={m.name} text={contentText(m.content)}>
        {calls.map((c, j) => <p key={j} class="mi-call"><span class="muted small">calls</span> <code>{c.name}</code> <code class="mi-args">{args(c.arguments)}</code></p>)}
      </Bubble>);
  });
  return (
    <details class="model-input" open={open}>
      <summary>What the model was given <span class="muted small">({messages.length + (system ? 1 : 0)} messages)</span>{" "}
        <HistoryBadge history={request?.history} /></summary>
      {bubbles.length === 0 ? <p class="muted small">This turn's request was not recorded.</p> : <ol class="mi-chat">{bubbles}</ol>}
    </details>
  );
}

function Bubble({ role, name, text, children }: { role: string; name?: string; text: string; children?: ComponentChildren }) {
  const kind = role === "user" ? "user" : role === "assistant" ? "assistant" : role === "tool" ? "tool" : "system";
  return (
    <li class={`mi-msg mi-${kind}`}>
      <div class="msg-meta"><strong>{ROLE_WORDS[role] || role}</strong>{name && <code class="small">{name}</code>}</div>
      {text && (kind === "tool" ? <pre class="code mi-tool">{pretty(text)}</pre> : <Markdown text={text} class="mi-text" />)}
      {children}
    </li>
  );
}

function pretty(text: string): string {
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch { return text; }
}
