// Workspace settings, in tabs: general (auth, origins, realtime, limits, retention, webhooks),
// API keys, connections and webhook deliveries (agents have their own page in the navigation).
import { Card, ErrorBox, Loading, PageHead, useApi } from "../components";
import { credits } from "../format";
import { Link } from "../router";
import { General } from "./settings_general";
import { Keys } from "./settings_keys";
import { Connections } from "./settings_connections";
import { Webhooks } from "./settings_webhooks";

type Obj = Record<string, any>;
const TABS = [["general", "General"], ["keys", "API keys"], ["connections", "Connections"], ["webhooks", "Webhooks"]] as const;

export function Settings({ ws, tab }: { ws: string; tab: string }) {
  const detail = useApi<Obj>(`/workspaces/${ws}`);
  const known = TABS.some(([slug]) => slug === tab);
  return (
    <div>
      <PageHead title="Settings" sub={detail.data ? <>{detail.data.name} · <span class="mono">{ws}</span> · {credits(detail.data.balance_credits)} credits</> : <span class="mono">{ws}</span>} />
      <nav aria-label="Settings sections" class="tabs">
        {TABS.map(([slug, label]) => (
          <Link key={slug} href={`/w/${ws}/settings/${slug === "general" ? "" : slug}`.replace(/\/$/, "")}
                class={tab === slug ? "tab active" : "tab"} aria-current={tab === slug ? "page" : undefined}>{label}</Link>
        ))}
      </nav>
      <ErrorBox error={detail.error} />
      {!known && <Card><p>No settings section “{tab}”.</p></Card>}
      {tab === "general" && (detail.data ? <General ws={ws} settings={detail.data} onSaved={(d) => detail.setData({ ...detail.data, ...d })} /> : detail.loading && <Loading />)}
      {tab === "keys" && <Keys ws={ws} />}
      {tab === "connections" && <Connections ws={ws} />}
      {tab === "webhooks" && <Webhooks ws={ws} />}
    </div>
  );
}
