// Heddle API client (ESM): browsers in direct mode (a session token from your backend's mint
// endpoint, `getToken`) and Node backends in relay mode (a workspace key and a subject).
// Types: index.d.ts, built on schema.d.ts, which is generated from Heddle's OpenAPI document.
// The only runtime dependency is pusher-js, loaded when `subscribe()` is first used.

const SETTLED = ["closed", "failed", "awaiting_input", "awaiting_outcome"];

export class HeddleError extends Error {
  constructor(code, message, status, { details, requestId, headers } = {}) {
    super(`${status} ${code}: ${message}`);
    this.name = new.target.name;
    this.code = code;
    this.status = status;
    this.details = details;
    this.requestId = requestId;
    this.headers = headers;
  }
}
export class InvalidRequestError extends HeddleError {}
export class AuthenticationError extends HeddleError {}
export class InsufficientCreditsError extends HeddleError {}
export class PermissionDeniedError extends HeddleError {}
export class NotFoundError extends HeddleError {}
export class ConflictError extends HeddleError {}
export class RequestRefusedError extends HeddleError {}
export class RateLimitedError extends HeddleError {
  get retryAfter() {
    const value = this.headers?.get?.("retry-after");
    return value == null ? null : Number(value);
  }
}
export class ServerError extends HeddleError {}
export class TransportError extends HeddleError {}
export class RunWaitTimeout extends Error {
  constructor(run, timeoutMs) {
    super(`run ${run?.id} still ${run?.state} after ${timeoutMs} ms`);
    this.name = "RunWaitTimeout";
    this.run = run;
  }
}

// The family of an error follows its HTTP status (the codes of each status are in the
// OpenAPI document's `info.x-error-codes`).
const FAMILIES = {
  400: InvalidRequestError, 401: AuthenticationError, 402: InsufficientCreditsError, 403: PermissionDeniedError,
  404: NotFoundError, 405: RequestRefusedError, 409: ConflictError, 413: RequestRefusedError,
  415: RequestRefusedError, 429: RateLimitedError, 431: RequestRefusedError,
};

function errorFrom(status, body, headers) {
  const error = body && body.status === "error" && body.error ? body.error
    : { code: status >= 500 ? "internal_error" : "invalid_response", message: `HTTP ${status} without a Heddle envelope` };
  const Family = status >= 500 ? ServerError : FAMILIES[status] ?? HeddleError;
  return new Family(error.code, error.message, status,
    { details: error.details, requestId: headers.get("request-id") ?? undefined, headers });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function newKey() {
  return globalThis.crypto.randomUUID();
}

export class Heddle {
  /**
   * Relay (server side): `new Heddle({ baseUrl, apiKey, subject })`.
   * Direct (browser): `new Heddle({ baseUrl, getToken })`, where getToken() returns a session token
   * (called before each request: cache it until shortly before it expires).
   */
  constructor({ baseUrl, apiKey, token, getToken, subject, connection, retries = 2, pollIntervalMs = 200,
    rateLimitRetries = 3, fetch: fetchImpl } = {}) {
    for (const [name, value] of [["apiKey", apiKey], ["token", token]]) {
      if (value != null && !(typeof value === "string" && value.trim())) {
        // An unset environment variable read as "" would otherwise fail at the first call.
        throw new TypeError(`${name} is empty: pass the workspace key (sk_...) as apiKey for relay mode, ` +
          "or a session token (or getToken) for direct mode");
      }
    }
    if ([apiKey, token, getToken].filter((x) => x != null).length !== 1) {
      throw new TypeError("give exactly one of apiKey (relay), token or getToken (direct)");
    }
    if (apiKey && typeof window !== "undefined" && typeof document !== "undefined") {
      throw new TypeError("a workspace key must never reach a browser: use getToken (direct mode)");
    }
    this.baseUrl = String(baseUrl).replace(/\/+$/, "");
    this.apiKey = apiKey;
    this.token = token;
    this.getToken = getToken;
    this.subject = subject;
    this.connection = connection;
    this.retries = retries;
    this.rateLimitRetries = rateLimitRetries;
    this.pollIntervalMs = pollIntervalMs;
    this.fetch = fetchImpl ?? globalThis.fetch.bind(globalThis);
    this.loom = new Loom(this);
  }

  get relay() {
    return this.apiKey != null;
  }

  async bearer() {
    return this.apiKey ?? this.token ?? (await this.getToken());
  }

  loomHeaders(subject, connection) {
    if (!this.relay) {
      if (subject != null) throw new TypeError("direct mode: the subject is the token's `sub`");
      return {};
    }
    const headers = {};
    const s = subject ?? this.subject;
    const c = connection ?? this.connection;
    if (s != null) headers["Service-Subject"] = s;
    if (c != null) headers["Service-Connection"] = c;
    return headers;
  }

  /** One call: the typed `data` of the success envelope, or a HeddleError subclass. */
  async request(method, path, { body, form, query, headers = {}, idempotencyKey } = {}) {
    const url = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(query ?? {})) if (v != null) url.searchParams.set(k, String(v));
    const h = { ...headers, Authorization: `Bearer ${await this.bearer()}` };
    if (body !== undefined) h["Content-Type"] = "application/json";
    // A POST gets one Idempotency-Key, sent again on every retry of a failed connection.
    if (method === "POST" && idempotencyKey !== false) h["Idempotency-Key"] = idempotencyKey ?? newKey();
    let response;
    for (let attempt = 0, limited = 0; ; attempt++) {
      try {
        // A FormData body (an upload) sets its own multipart Content-Type with the boundary.
        const sent = form ?? (body === undefined ? undefined : JSON.stringify(body));
        response = await this.fetch(url, { method, headers: h, body: sent });
      } catch (err) {
        if (attempt >= this.retries) throw new TransportError("transport_error", String(err?.message ?? err), 0);
        await sleep(200 * 2 ** attempt);
        continue;
      }
      // A 429 is waited out as its Retry-After says (at most 10 s, rateLimitRetries times); the
      // POST goes again with the same Idempotency-Key, so nothing is done twice.
      if (response.status !== 429 || limited >= this.rateLimitRetries) break;
      const said = Number(response.headers.get("retry-after"));
      await sleep(1000 * Math.min(Number.isFinite(said) && said >= 0 ? said : 2 ** limited, 10));
      limited++;
    }
    let payload = null;
    try {
      payload = await response.json();
    } catch {
      payload = null;
    }
    if (response.ok && payload?.status === "success") return payload.data;
    throw errorFrom(response.status, payload, response.headers);
  }

  workspace() {
    return this.request("GET", "/v1/workspace");
  }

  identify({ identifier, rail, country, account_number: accountNumber, accountNumber: camel, idempotencyKey }) {
    const body = { identifier };
    if (rail != null) body.rail = rail;
    if (country != null) body.country = country;
    if ((accountNumber ?? camel) != null) body.account_number = accountNumber ?? camel;
    return this.request("POST", "/v1/identify", { body, idempotencyKey });
  }
}

export class RunHandle {
  constructor(loom, accepted, threadId, subject) {
    this.loom = loom;
    this.threadId = threadId;
    this.subject = subject;
    this.runId = accepted.run_id;
    this.messageId = accepted.message_id;
    this.run = accepted.run;
  }

  async wait(options = {}) {
    this.run = await this.loom.wait(this.runId, { subject: this.subject, ...options });
    return this.run;
  }
}

export class Loom {
  constructor(client) {
    this.client = client;
    this.noEventStream = false;
  }

  openThread(agent, { subject, idempotencyKey } = {}) {
    return this.client.request("POST", "/v1/loom/threads",
      { body: { agent }, headers: this.client.loomHeaders(subject), idempotencyKey });
  }

  listThreads({ subject, agent, limit, after } = {}) {
    return this.client.request("GET", "/v1/loom/threads",
      { query: { agent, limit, after }, headers: this.client.loomHeaders(subject) });
  }

  /** Upload a file (a Blob, File, ArrayBuffer or Uint8Array) to the thread; its type is decided
   *  by its bytes. Send the returned `id` with `postMessage(..., { attachments: [id] })`. */
  async upload(threadId, file, { name, subject, idempotencyKey } = {}) {
    const blob = file instanceof Blob ? file : new Blob([file]);
    const form = new FormData();
    form.append("file", blob, name ?? file?.name ?? "file");
    return this.client.request("POST", `/v1/loom/threads/${encodeURIComponent(threadId)}/attachments`,
      { form, headers: this.client.loomHeaders(subject), idempotencyKey });
  }

  async getAttachment(attachmentId, { subject } = {}) {
    return this.client.request("GET", `/v1/loom/attachments/${encodeURIComponent(attachmentId)}`,
      { headers: this.client.loomHeaders(subject) });
  }

  async postMessage(threadId, content, { subject, connection, idempotencyKey, ...extra } = {}) {
    const accepted = await this.client.request("POST", `/v1/loom/threads/${encodeURIComponent(threadId)}/messages`,
      { body: { content, ...extra }, headers: this.client.loomHeaders(subject, connection), idempotencyKey });
    return new RunHandle(this, accepted, threadId, subject);
  }

  /** Open (or reuse) the subject's thread with `agent` and post `content` to it. */
  async send({ agent, content, subject, connection }) {
    const thread = await this.openThread(agent, { subject });
    return this.postMessage(thread.id, content, { subject, connection });
  }

  getThread(threadId, { subject } = {}) {
    return this.client.request("GET", `/v1/loom/threads/${encodeURIComponent(threadId)}`,
      { headers: this.client.loomHeaders(subject) });
  }

  /** Erase the thread: its messages, runs, turns and tool calls. */
  deleteThread(threadId, { subject } = {}) {
    return this.client.request("DELETE", `/v1/loom/threads/${encodeURIComponent(threadId)}`,
      { headers: this.client.loomHeaders(subject) });
  }

  /** Erase every thread of a person (relay key only). */
  deleteSubject(subject) {
    return this.client.request("DELETE", `/v1/loom/subjects/${encodeURIComponent(subject)}`);
  }

  listMessages(threadId, { subject, limit, after } = {}) {
    return this.client.request("GET", `/v1/loom/threads/${encodeURIComponent(threadId)}/messages`,
      { query: { limit, after }, headers: this.client.loomHeaders(subject) });
  }

  getRun(runId, { subject } = {}) {
    return this.client.request("GET", `/v1/loom/runs/${encodeURIComponent(runId)}`,
      { headers: this.client.loomHeaders(subject) });
  }

  getTrace(runId, { subject } = {}) {
    return this.client.request("GET", `/v1/loom/runs/${encodeURIComponent(runId)}/trace`,
      { headers: this.client.loomHeaders(subject) });
  }

  postOutcome(runId, { toolCallId, state, detail, subject, idempotencyKey }) {
    const body = { tool_call_id: toolCallId, state };
    if (detail != null) body.detail = detail;
    return this.client.request("POST", `/v1/loom/runs/${encodeURIComponent(runId)}/outcome`,
      { body, headers: this.client.loomHeaders(subject), idempotencyKey });
  }

  approve(runId, { toolCallId, approved, reason, subject, idempotencyKey }) {
    const body = { tool_call_id: toolCallId, approved };
    if (reason != null) body.reason = reason;
    return this.client.request("POST", `/v1/loom/runs/${encodeURIComponent(runId)}/approval`,
      { body, headers: this.client.loomHeaders(subject), idempotencyKey });
  }

  /** Rate an assistant message "up" or "down" (replaces the subject's earlier rating). */
  feedback(messageId, { rating, comment, subject }) {
    const body = { rating };
    if (comment != null) body.comment = comment;
    return this.client.request("POST", `/v1/loom/messages/${encodeURIComponent(messageId)}/feedback`,
      { body, headers: this.client.loomHeaders(subject) });
  }

  /** Withdraw the subject's rating of an assistant message. */
  withdrawFeedback(messageId, { subject } = {}) {
    return this.client.request("DELETE", `/v1/loom/messages/${encodeURIComponent(messageId)}/feedback`,
      { headers: this.client.loomHeaders(subject) });
  }

  cancel(runId, { subject, idempotencyKey } = {}) {
    return this.client.request("POST", `/v1/loom/runs/${encodeURIComponent(runId)}/cancel`,
      { headers: this.client.loomHeaders(subject), idempotencyKey });
  }

  realtimeConfig({ subject } = {}) {
    return this.client.request("GET", "/v1/loom/realtime/config", { headers: this.client.loomHeaders(subject) });
  }

  /**
   * The run once its state is in `until` (default: closed, failed, awaiting_input or
   * awaiting_outcome). Follows the run's event stream when the server offers one; polls otherwise.
   */
  async wait(runId, { subject, until = SETTLED, timeoutMs = 60_000 } = {}) {
    const deadline = Date.now() + timeoutMs;
    let run = await this.getRun(runId, { subject });
    if (until.includes(run.state)) return run;
    const streamed = await this.#followEvents(runId, subject, until, deadline);
    if (streamed) return streamed;
    let delay = this.client.pollIntervalMs;
    while (Date.now() < deadline) {
      run = await this.getRun(runId, { subject });
      if (until.includes(run.state)) return run;
      await sleep(Math.min(delay, Math.max(0, deadline - Date.now())));
      delay = Math.min(delay * 1.5, 2000);
    }
    throw new RunWaitTimeout(run, timeoutMs);
  }

  // Server-Sent Events of GET /v1/loom/runs/{id}/events, read from fetch's body stream (an
  // EventSource cannot send the Authorization header).
  async #followEvents(runId, subject, until, deadline) {
    if (this.noEventStream) return null;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), Math.max(0, deadline - Date.now()));
    try {
      const response = await this.client.fetch(`${this.client.baseUrl}/v1/loom/runs/${encodeURIComponent(runId)}/events`, {
        headers: { ...this.client.loomHeaders(subject), Authorization: `Bearer ${await this.client.bearer()}`,
          Accept: "text/event-stream" },
        signal: controller.signal,
      });
      if (!response.ok || !(response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
        if (response.status === 404 || response.status === 405) this.noEventStream = true; // an older server
        await response.body?.cancel();
        return null;
      }
      const decoder = new TextDecoder();
      let buffer = "";
      for await (const chunk of response.body) {
        buffer += decoder.decode(chunk, { stream: true });
        let end;
        while ((end = buffer.search(/\r?\n\r?\n/)) !== -1) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, "");
          let event = "message";
          const data = [];
          for (const line of block.split(/\r?\n/)) {
            if (line.startsWith("event:")) event = line.slice(6).trim();
            else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
          }
          if (event !== "run.updated" || data.length === 0) continue;
          let run = JSON.parse(data.join("\n"));
          if (run?.status === "success") run = run.data;
          if (until.includes(run.state)) {
            controller.abort();
            return run;
          }
        }
      }
      return null;
    } catch {
      return null; // the stream broke or timed out: polling decides
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Thread events (`message.created`, `run.updated`) over realtime with pusher-js.
   * Returns an object with `unsubscribe()`. Needs realtime enabled for the workspace.
   */
  async subscribe(threadId, onEvent, { subject, Pusher } = {}) {
    const config = await this.realtimeConfig({ subject });
    if (!config.enabled) throw new ConflictError("realtime_disabled", "Realtime is off for this workspace.", 409);
    const PusherClass = Pusher ?? (await import("pusher-js")).default;
    const client = this.client;
    const pusher = new PusherClass(config.key, {
      cluster: config.cluster, wsHost: config.ws_host, wsPort: config.ws_port, wssPort: config.ws_port,
      forceTLS: config.force_tls, enabledTransports: ["ws", "wss"], disableStats: true,
      channelAuthorization: {
        customHandler: ({ socketId, channelName }, callback) => {
          client.request("POST", "/v1/loom/realtime/auth", {
            body: { socket_id: socketId, channel_name: channelName }, headers: client.loomHeaders(subject),
            idempotencyKey: false,
          }).then((data) => callback(null, { auth: data.auth }), (err) => callback(err, null));
        },
      },
    });
    const channel = pusher.subscribe(`private-thread-${threadId}`);
    for (const name of ["message.created", "run.updated", "message.delta"]) {
      channel.bind(name, (data) => onEvent(name, data));
    }
    await new Promise((resolve, reject) => {
      channel.bind("pusher:subscription_succeeded", resolve);
      channel.bind("pusher:subscription_error", (status) => reject(new PermissionDeniedError(
        "forbidden", `subscription refused (${JSON.stringify(status)})`, 403)));
    });
    return { unsubscribe: () => pusher.disconnect() };
  }
}

export default Heddle;
