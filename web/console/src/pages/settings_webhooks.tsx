// Webhook deliveries: the newest ones with their state and, when they failed, why (a refused
// destination fails at once with its reason instead of retrying for 72 hours).
import { Badge, Card, Empty, ErrorBox, Loading, useApi } from "../components";
import { when } from "../format";

type Obj = Record<string, any>;
const TONE: Record<string, string> = { delivered: "green", pending: "amber", failed: "red" };

export function Webhooks({ ws }: { ws: string }) {
  const list = useApi<{ items: Obj[] }>(`/workspaces/${ws}/webhook-deliveries`);
  return (
    <Card title="Webhook deliveries" actions={<button type="button" class="btn" onClick={() => list.reload()}>Refresh</button>}>
      {list.loading && !list.data && <Loading />}
      <ErrorBox error={list.error} />
      {list.data && (list.data.items.length === 0 ? <Empty>No webhook deliveries yet.</Empty> : (
        <table class="table" aria-label="Webhook deliveries">
          <thead><tr><th scope="col">Event</th><th scope="col">State</th><th scope="col">Attempts</th><th scope="col">Owed</th><th scope="col">Last error</th></tr></thead>
          <tbody>{list.data.items.map((d) => (
            <tr key={d.id}>
              <td><span class="mono small">{d.id}</span><br /><span class="small">{d.type}</span></td>
              <td><Badge value={d.state} tone={TONE[d.state]} /></td>
              <td>{d.attempt_count}{d.next_attempt_at && <span class="small muted"> · next {when(d.next_attempt_at)}</span>}</td>
              <td class="small">{when(d.created_at)}</td>
              <td class="small">{d.last_error || <span class="muted">—</span>}</td>
            </tr>
          ))}</tbody>
        </table>
      ))}
    </Card>
  );
}
