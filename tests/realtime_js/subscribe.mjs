// Drives the official pusher-js client against heddle serve, for the test suite.
// argv[2] is JSON: {key, wsHost, wsPort, authEndpoint, token, headers?, channels: [...], expect, timeoutMs}
// Prints one JSON line per happening: state changes, subscription results and events.
import Pusher from "pusher-js";

const cfg = JSON.parse(process.argv[2]);
const out = (o) => process.stdout.write(JSON.stringify({ ...o, t: Date.now() }) + "\n");
const pusher = new Pusher(cfg.key, {
  wsHost: cfg.wsHost,
  wsPort: cfg.wsPort,
  forceTLS: false,
  enabledTransports: ["ws"],
  disableStats: true,
  cluster: "heddle",
  channelAuthorization: {
    endpoint: cfg.authEndpoint,
    transport: "ajax",
    headers: { Authorization: `Bearer ${cfg.token}`, ...(cfg.headers || {}) },
  },
});

let events = 0;
const finish = (code) => {
  pusher.disconnect();
  setTimeout(() => process.exit(code), 50);
};
setTimeout(() => { out({ type: "timeout" }); finish(2); }, cfg.timeoutMs || 15000);

pusher.connection.bind("state_change", (s) => out({ type: "state", state: s.current }));
for (const name of cfg.channels) {
  const channel = pusher.subscribe(name);
  channel.bind("pusher:subscription_succeeded", () => out({ type: "subscribed", channel: name }));
  channel.bind("pusher:subscription_error", (e) => out({ type: "subscription_error", channel: name, status: e.status }));
  channel.bind_global((event, data) => {
    if (event.startsWith("pusher")) return;
    out({ type: "event", channel: name, event, data });
    events += 1;
    if (events >= cfg.expect) finish(0);
  });
}
// Tell the test when every subscription has settled.
process.stdin.on("data", () => {});
