// Drives the official pusher-js client (its Node build) for the realtime test suite.
//
// Config: a JSON object as the first argument, or on stdin when there is none:
//   {key, wsHost, wsPort, authEndpoint, token, headers?, channels: [...], events: N, timeoutMs}
// Prints one JSON line per happening, each with `t` (Date.now(), ms):
//   {"type": "connected", "socket_id"}
//   {"type": "subscribed", "channel"}
//   {"type": "subscription_error", "channel", "status", "error"}
//   {"type": "event", "channel", "event", "data"}
//   {"type": "error", "error"}                      (connection-level errors)
//   {"type": "done", "events"} then exit 0          (after N events; with N = 0, once every
//                                                     subscription has succeeded or failed)
//   {"type": "timeout", "events"} then exit 2
//   {"type": "config_error", "message"} then exit 64
// Channel authorization uses pusher-js's own "ajax" transport: in Node it runs on the
// XMLHttpRequest implementation bundled into pusher-js's Node build.
import { readFileSync } from "node:fs";
import Pusher from "pusher-js";

const emit = (line) => process.stdout.write(JSON.stringify({ ...line, t: Date.now() }) + "\n");

function readConfig() {
  const raw = process.argv[2] ?? readFileSync(0, "utf8");
  const cfg = JSON.parse(raw);
  const problems = [];
  if (typeof cfg.key !== "string" || !cfg.key) problems.push("key must be a non-empty string");
  if (typeof cfg.wsHost !== "string" || !cfg.wsHost) problems.push("wsHost must be a non-empty string");
  if (!Number.isInteger(cfg.wsPort) || cfg.wsPort < 1 || cfg.wsPort > 65535) problems.push("wsPort must be a port");
  if (typeof cfg.authEndpoint !== "string") problems.push("authEndpoint must be a URL string");
  if (!Array.isArray(cfg.channels) || !cfg.channels.every((c) => typeof c === "string")) {
    problems.push("channels must be an array of strings");
  }
  cfg.events = cfg.events ?? 0;
  cfg.timeoutMs = cfg.timeoutMs ?? 15000;
  if (!Number.isInteger(cfg.events) || cfg.events < 0) problems.push("events must be an integer >= 0");
  if (!Number.isInteger(cfg.timeoutMs) || cfg.timeoutMs < 1) problems.push("timeoutMs must be an integer >= 1");
  if (problems.length) throw new Error(problems.join("; "));
  return cfg;
}

let cfg;
try {
  cfg = readConfig();
} catch (err) {
  emit({ type: "config_error", message: String(err.message || err) });
  process.exit(64);
}

const pusher = new Pusher(cfg.key, {
  wsHost: cfg.wsHost,
  wsPort: cfg.wsPort,
  forceTLS: false,
  enabledTransports: ["ws"],
  disableStats: true,
  cluster: "x",
  channelAuthorization: {
    endpoint: cfg.authEndpoint,
    transport: "ajax",
    headers: { Authorization: `Bearer ${cfg.token ?? ""}`, ...(cfg.headers ?? {}) },
  },
});

let received = 0;
const settled = new Set();

function finish(type, code) {
  clearTimeout(timer);
  pusher.disconnect();
  process.stdout.write(JSON.stringify({ type, events: received, t: Date.now() }) + "\n", () => process.exit(code));
}

function maybeDone() {
  const subscriptionsSettled = settled.size === cfg.channels.length;
  if (cfg.events > 0 ? received >= cfg.events : subscriptionsSettled) finish("done", 0);
}

const timer = setTimeout(() => finish("timeout", 2), cfg.timeoutMs);

pusher.connection.bind("connected", () => emit({ type: "connected", socket_id: pusher.connection.socket_id }));
pusher.connection.bind("error", (err) => emit({ type: "error", error: err?.error?.data ?? err?.type ?? null }));

for (const name of cfg.channels) {
  const channel = pusher.subscribe(name);
  channel.bind("pusher:subscription_succeeded", () => {
    settled.add(name);
    emit({ type: "subscribed", channel: name });
    maybeDone();
  });
  channel.bind("pusher:subscription_error", (err) => {
    settled.add(name);
    emit({ type: "subscription_error", channel: name, status: err?.status ?? null, error: err?.error ?? null });
    maybeDone();
  });
  channel.bind_global((event, data) => {
    if (event.startsWith("pusher:") || event.startsWith("pusher_internal:")) return;
    received += 1;
    emit({ type: "event", channel: name, event, data });
    maybeDone();
  });
}
maybeDone(); // nothing to wait for when there are neither channels nor events
