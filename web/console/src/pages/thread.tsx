// A thread's conversation: the messages as a chat, each linked to the run that answered it.
import { Badge, Card, Empty, ErrorBox, Loading, Markdown, PageHead, RawJson, useApi } from "../components";
import { credits, short, when } from "../format";
import { Link } from "../router";
import { ScheduleList } from "./schedules";
import { Attachments } from "../attachments";

type Obj = Record<string, any>;

export function Thread({ ws, thread }: { ws: string; thread: string }) {
  const { data, error, loading } = useApi<{ thread: Obj; messages: Obj[]; runs: Obj[]; agent?: Obj; summaries?: Obj[]; memories?: Obj[] }>(`/workspaces/${ws}/threads/${thread}`);
  if (!data) return (
    <div>
      <p class="crumbs"><Link href={`/w/${ws}/threads`}>Threads</Link> <span aria-hidden="true">/</span> Thread</p>
      <PageHead title="Conversation" sub={<span class="mono">{thread}</span>} />
      {loading && <Loading what="Loading the conversation" />}<ErrorBox error={error} />
    </div>
  );
  const { thread: t, messages, runs } = data;
  return (
    <div>
      <p class="crumbs"><Link href={`/w/${ws}/threads`}>Threads</Link> <span aria-hidden="true">/</span> Thread</p>
      <PageHead title="Conversation" sub={<><span class="mono">{t.subject}</span> with <Link href={`/w/${ws}/agents/${t.agent}`}>{data.agent?.name || t.agent}</Link> · started {when(t.created_at)}</>} />
      <div class="two-col two-col-wide">
        <Card title="Messages">
          {messages.length === 0 ? <Empty>No messages yet.</Empty> : (
            <ol class="chat" aria-label="Messages, oldest first">
              {messages.map((m) => (
                <li key={m.id} class={`msg msg-${m.role}`}>
                  <div class="msg-meta"><strong>{m.role === "user" ? "User" : "Assistant"}</strong>
                    <time dateTime={m.created_at}>{when(m.created_at)}</time>
                    {m.run_id && <Link href={`/w/${ws}/runs/${m.run_id}`} class="small">run {short(m.run_id)}</Link>}</div>
                  {m.scheduled && <div class="small muted">scheduled{m.scheduled.created_by === "agent" ? " by the agent" : ""}{m.scheduled.late ? `, ${Math.round(m.scheduled.late_seconds)} s late` : ""}</div>}
                  {m.role === "user" ? <div class="msg-text">{m.content}</div> : m.data ? <RawJson value={m.data} label="Structured reply" /> : <Markdown text={m.content} class="msg-text" />}
                  <Attachments ws={ws} items={m.attachments} />
                </li>
              ))}
            </ol>
          )}
        </Card>
        <Card title="Runs of this thread">
          {runs.length === 0 ? <Empty>No runs.</Empty> : (
            <ul class="plain">
              {runs.map((r) => (
                <li key={r.id} class="run-line">
                  <Link href={`/w/${ws}/runs/${r.id}`} class="mono">{short(r.id)}</Link> <Badge value={r.state} />
                  <span class="small muted"> {credits(r.cost_credits)} credits · {when(r.opened_at || r.created_at)}</span>
                </li>
              ))}
            </ul>
          )}
        </Card>
      </div>
      <Card title="Schedules of this thread"><ScheduleList ws={ws} thread={thread} /></Card>
      <div class="two-col two-col-wide">
        <Card title="Thread summaries">
          {!data.summaries?.length ? <Empty>No summary: the whole thread still fits the model's history budget.</Empty> : (
            <ul class="plain" aria-label="Summaries, newest first">
              {data.summaries.map((x) => (
                <li key={x.id} class="summary-line">
                  <div class="small muted">Messages 1–{x.through_seq} ({x.messages} summarized) · {x.model_class} · {when(x.created_at)}
                    {x.run_id && <> · <Link href={`/w/${ws}/runs/${x.run_id}`} class="mono">run {short(x.run_id)}</Link></>}</div>
                  <div class="msg-text">{x.content}</div>
                </li>
              ))}
            </ul>
          )}
        </Card>
        <Card title={<>What agents remember about <span class="mono">{t.subject}</span></>}>
          {!data.memories?.length ? <Empty>Nothing is remembered about this subject.</Empty> : (
            <ul class="plain" aria-label="Remembered facts, newest first">
              {data.memories.map((m) => (
                <li key={m.id} class="memory-line">
                  <span>{m.content}</span>
                  <span class="small muted"> · {m.source === "tool" ? "remembered by an agent" : "added by the API"} · {when(m.created_at)}</span>
                </li>
              ))}
            </ul>
          )}
        </Card>
      </div>
      <RawJson value={data} />
    </div>
  );
}
