// The workspace's own settings; only changed fields are sent (PATCH), secrets show once on rotation.
import { useState } from "preact/hooks";
import { api } from "../api";
import { Card, CopyButton, ErrorBox, Field, Notice, useAction } from "../components";

type Obj = Record<string, any>;

function linesOf(v: string): string[] { return v.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean); }
function own(rule: string | null | undefined): string { return !rule || rule === "default" ? "" : rule; }

// The limit in force, from the server (`rate_limits`): the workspace's own rule, or the server's default.
function limitHint(limit: Obj | undefined, example: string): string {
  if (!limit) return `e.g. "${example}", "off", or empty for the server's default.`;
  const value = limit.value === "off" ? "no limit" : limit.value;
  return limit.is_default ? `In force: ${value} (the server's default). Set e.g. "${example}" or "off".`
    : `In force: ${value} (this workspace's own). Empty it to use the server's default.`;
}

export function General({ ws, settings, onSaved }: { ws: string; settings: Obj; onSaved: (d: Obj) => void }) {
  const init = {
    jwks_uri: settings.jwks_uri || "",
    jwks: settings.jwks ? JSON.stringify(settings.jwks, null, 2) : "",
    allowed_origins: (settings.allowed_origins || []).join("\n"),
    mint_url: settings.mint_url || "",
    realtime: !!settings.realtime,
    // Empty means the server's default (its rule shows as the placeholder and in the hint).
    rate_limit_per_key: own(settings.rate_limit_per_key),
    rate_limit_per_subject: own(settings.rate_limit_per_subject),
    retention_days: settings.retention_days == null ? "" : String(settings.retention_days),
    webhook_url: settings.webhook_url || "",
  };
  const [f, setF] = useState(init);
  const [dev, setDev] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  const [jwksError, setJwksError] = useState<string | null>(null);
  const [secret, setSecret] = useState<{ label: string; value: string } | null>(null);
  const set = (k: keyof typeof init) => (e: Event) => {
    const el = e.currentTarget as HTMLInputElement;
    setF({ ...f, [k]: el.type === "checkbox" ? el.checked : el.value });
  };

  const save = useAction(async () => {
    setNotice(null);
    const body: Obj = {};
    // An emptied field clears the setting (null); untouched fields are not sent.
    const url = (v: string) => v.trim() || null;
    if (f.jwks_uri !== init.jwks_uri) body.jwks_uri = url(f.jwks_uri);
    if (f.jwks !== init.jwks) {
      if (!f.jwks.trim()) body.jwks = null;
      else {
        try { body.jwks = JSON.parse(f.jwks); setJwksError(null); } catch {
          setJwksError("The pasted JWKS is not valid JSON. Paste the public key set, like {\"keys\": [...]}.");
          return;
        }
      }
    }
    if (f.allowed_origins !== init.allowed_origins) body.allowed_origins = linesOf(f.allowed_origins);
    if (f.mint_url !== init.mint_url) body.mint_url = url(f.mint_url);
    if (f.realtime !== init.realtime) body.realtime = f.realtime;
    if (f.rate_limit_per_key !== init.rate_limit_per_key) body.rate_limit_per_key = f.rate_limit_per_key.trim() || "default";
    if (f.rate_limit_per_subject !== init.rate_limit_per_subject) body.rate_limit_per_subject = f.rate_limit_per_subject.trim() || "default";
    if (f.retention_days !== init.retention_days) body.retention_days = f.retention_days === "" ? null : Number(f.retention_days);
    if (f.webhook_url !== init.webhook_url) body.webhook_url = url(f.webhook_url);
    if (Object.keys(body).length === 0) { setNotice("Nothing changed."); return; }
    if (dev) body.dev = true;
    const d = await api<Obj>("PATCH", `/workspaces/${ws}`, body);
    onSaved(d);
    if (d.webhook_secret && body.webhook_url && !String(d.webhook_secret).includes("…")) setSecret({ label: "Webhook secret", value: d.webhook_secret });
    setNotice(`Saved: ${Object.keys(body).filter((k) => k !== "dev").join(", ").replace(/_/g, " ")}.`);
  });
  const rotate = useAction(async (which: "request" | "webhook") => {
    const d = await api<Obj>("PATCH", `/workspaces/${ws}`, { [`rotate_${which}_secret`]: true });
    onSaved(d);
    setSecret({ label: which === "request" ? "Request secret" : "Webhook secret", value: d[`${which}_secret`] });
  });

  return (
    <div class="settings-grid">
      <form onSubmit={(e) => { e.preventDefault(); save.run(); }} aria-label="Workspace settings">
        <Card title="Direct mode (session tokens)">
          <Field label="JWKS URI" hint="Where Heddle fetches the public keys that verify your session tokens.">
            {(id) => <input id={id} type="url" placeholder="https://auth.example.com/.well-known/jwks.json" value={f.jwks_uri} onInput={set("jwks_uri")} aria-describedby={`${id}-hint`} />}
          </Field>
          <Field label="Or paste a public JWKS" hint="JSON with a keys array. Private key material is refused.">
            {(id) => <textarea id={id} class="mono" rows={5} placeholder='{"keys": [...]}' value={f.jwks} onInput={set("jwks")} aria-describedby={`${id}-hint`} />}
          </Field>
          {jwksError && <p class="field-error" role="alert">{jwksError}</p>}
          <Field label="Allowed origins" hint="One per line, exactly scheme://host[:port]. Wildcards are refused.">
            {(id) => <textarea id={id} class="mono" rows={3} value={f.allowed_origins} onInput={set("allowed_origins")} aria-describedby={`${id}-hint`} />}
          </Field>
          <Field label="Mint URL" hint="Your endpoint that turns a subject_ref into a session token subject.">
            {(id) => <input id={id} type="url" value={f.mint_url} onInput={set("mint_url")} aria-describedby={`${id}-hint`} />}
          </Field>
        </Card>
        <Card title="Realtime, limits and retention">
          <div class="check">
            <input id="s-realtime" type="checkbox" checked={f.realtime} onChange={set("realtime")} />
            <label for="s-realtime">Realtime events (message.created, run.updated) for this workspace</label>
          </div>
          <div class="form-row">
            <Field label="Rate limit per key" hint={limitHint(settings.rate_limits?.per_key, "600/minute")}>
              {(id) => <input id={id} class="mono" value={f.rate_limit_per_key} placeholder={settings.rate_limits?.per_key?.value}
                              onInput={set("rate_limit_per_key")} aria-describedby={`${id}-hint`} />}
            </Field>
            <Field label="Rate limit per subject" hint={limitHint(settings.rate_limits?.per_subject, "60/minute")}>
              {(id) => <input id={id} class="mono" value={f.rate_limit_per_subject} placeholder={settings.rate_limits?.per_subject?.value}
                              onInput={set("rate_limit_per_subject")} aria-describedby={`${id}-hint`} />}
            </Field>
            <Field label="Retention (days)" hint="Threads older than this are erased; empty or 0 keeps them.">
              {(id) => <input id={id} type="number" min="0" max="36500" value={f.retention_days} onInput={set("retention_days")} aria-describedby={`${id}-hint`} />}
            </Field>
          </div>
        </Card>
        <Card title="Webhooks">
          <Field label="Webhook URL" hint="Heddle POSTs run.closed, run.failed, run.awaiting_input and run.awaiting_outcome here, signed.">
            {(id) => <input id={id} type="url" value={f.webhook_url} onInput={set("webhook_url")} aria-describedby={`${id}-hint`} />}
          </Field>
          {settings.webhook_secret && <p class="small">Webhook secret: <span class="mono">{settings.webhook_secret}</span></p>}
        </Card>
        <div class="check">
          <input id="s-dev" type="checkbox" checked={dev} onChange={(e) => setDev(e.currentTarget.checked)} />
          <label for="s-dev">Development: allow plain http and private addresses in the URLs above</label>
        </div>
        <div class="form-actions">
          <button class="btn btn-primary" disabled={save.busy}>{save.busy ? "Saving…" : "Save settings"}</button>
          <button type="button" class="btn btn-ghost" onClick={() => { setF(init); setJwksError(null); }}>Reset</button>
        </div>
        <ErrorBox error={save.error} title="Not saved" />
        <Notice message={notice} onClose={() => setNotice(null)} />
      </form>
      <div>
        <Card title="Secrets">
          <p class="small">The request secret signs Heddle's calls to your tool hosts and mint URL.</p>
          <p class="small">Current: <span class="mono">{settings.request_secret}</span></p>
          <div class="actions">
            <button type="button" class="btn" disabled={rotate.busy} onClick={() => rotate.run("request")}>Rotate request secret</button>
            <button type="button" class="btn" disabled={rotate.busy} onClick={() => rotate.run("webhook")}>Rotate webhook secret</button>
          </div>
          <ErrorBox error={rotate.error} />
          {secret && (
            <div class="secret-once" role="status">
              <p><strong>{secret.label}</strong> — copy it now; it is not shown again.</p>
              <div class="secret-row"><code class="mono" data-testid="secret">{secret.value}</code><CopyButton text={secret.value} /></div>
              <button type="button" class="btn-link small" onClick={() => setSecret(null)}>I have stored it</button>
            </div>
          )}
        </Card>
      </div>
    </div>
  );
}
