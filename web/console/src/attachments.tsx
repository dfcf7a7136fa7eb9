// A message's files (issue 43) in the thread view and the run trace: a thumbnail for an image,
// the name and size, and a download link. The bytes come from the console's own download route
// (same origin, the operator's session cookie): always `Content-Disposition: attachment`.
import { API } from "./api";

type Obj = Record<string, any>;
const IMAGE = /^image\/(png|jpeg|gif|webp)$/;

export function fileSize(bytes: number): string {
  if (!(bytes >= 0)) return "";
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

export function Attachments({ ws, items }: { ws: string; items?: Obj[] }) {
  if (!items || !items.length) return null;
  return (
    <ul class="attachments" aria-label="Attached files">
      {items.map((a) => {
        const href = `${API}/workspaces/${encodeURIComponent(ws)}/attachments/${encodeURIComponent(a.id)}/content`;
        return (
          <li key={a.id} class="attachment" data-id={a.id}>
            {IMAGE.test(a.content_type) && <img class="attachment-thumb" src={href} alt={a.name} loading="lazy" />}
            <span class="attachment-name">{a.name}</span>
            <span class="small muted"> {a.content_type} · {fileSize(a.size)}{a.width ? ` · ${a.width}×${a.height}` : ""}{a.pages ? ` · ${a.pages} pages` : ""}</span>
            <a href={href} download={a.name} class="small">Download<span class="sr-only"> {a.name}</span></a>
          </li>
        );
      })}
    </ul>
  );
}
