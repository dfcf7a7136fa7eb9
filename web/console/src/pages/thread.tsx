// A thread's conversation: the messages as a chat, each linked to the run that answered it.
import { Badge, Card, Empty, ErrorBox, Loading, Markdown, PageHead, RawJson, useApi } from "../components";
import { credits, short, when } from "../format";
import { Link } from "../router";
import { Attachments } from "../attachments";

type Obj = Record<string, any>;

export function Thread({ ws, thread }: { ws: string; thread: string }) {
  const { data, error, loading } = useApi<{ thread: Obj; messages: Obj[]; runs: Obj[]; agent?: Obj }>(`/workspaces/${ws}/threads/${thread}`);
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
                  {m.role === "user" ? <div class="msg-text">{m.content}</div> : <Markdown text={m.content} class="msg-text" />}
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
      <RawJson value={data} />
    </div>
  );
}
