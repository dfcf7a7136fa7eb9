// Talking to Heddle in direct mode: a session token from the page's getToken() (the caller's
// mint endpoint), kept until shortly before it expires and fetched again on a 401, and one
// `request()` that turns every failure into a ChatError a person can be shown (errors.js).

export class ChatError extends Error {
  /** kind: "network" | "token" | "api" | "run"; code/status from Heddle's error envelope. */
  constructor(kind, message, { code, status, details, retryAfter } = {}) {
    super(message);
    this.name = "ChatError";
    this.kind = kind;
    this.code = code;
    this.status = status;
    this.details = details;
    this.retryAfter = retryAfter;
  }
}

// Refresh this long before `exp`: a request started just before expiry still arrives in time.
const MARGIN_MS = 20_000;

function jwtExpiry(token) {
  try {
    const part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    const claims = JSON.parse(atob(part + "=".repeat((4 - (part.length % 4)) % 4)));
    return typeof claims.exp === "number" ? claims.exp * 1000 : null;
  } catch {
    return null;
  }
}

export function newKey() {
  if (globalThis.crypto && crypto.randomUUID) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export class Tokens {
  constructor(getToken) {
    this.getToken = getToken;
    this.token = null;
    this.expiresAt = 0;
    this.pending = null;
  }

  /** A token valid for at least MARGIN_MS; concurrent callers share one getToken() call. */
  async get() {
    if (this.token && this.expiresAt - Date.now() > MARGIN_MS) return this.token;
    if (!this.pending) this.pending = this.fetch().finally(() => { this.pending = null; });
    return this.pending;
  }

  invalidate(token) {
    if (!token || token === this.token) this.token = null;
  }

  async fetch() {
    let answer;
    try {
      answer = await this.getToken();
    } catch (err) {
      throw new ChatError("token", String((err && err.message) || err), { status: err && err.status });
    }
    // getToken may return the token, or the mint endpoint's {token, expires_in} (or its envelope).
    const data = answer && typeof answer === "object" && answer.data ? answer.data : answer;
    const token = typeof data === "string" ? data : data && data.token;
    if (typeof token !== "string" || !token) throw new ChatError("token", "getToken() returned no token");
    const lifetime = data && typeof data === "object" && Number(data.expires_in) > 0 ? Number(data.expires_in) * 1000 : null;
    this.token = token;
    this.expiresAt = jwtExpiry(token) ?? (lifetime ? Date.now() + lifetime : Date.now() + 60_000);
    return token;
  }
}

export class Api {
  constructor(baseUrl, tokens) {
    this.baseUrl = baseUrl;
    this.tokens = tokens;
  }

  /**
   * The `data` of Heddle's success envelope. A 401 gets one fresh token and one more try; a POST
   * with an Idempotency-Key is retried on a dropped connection (a retry can never post twice).
   */
  async request(method, path, { body, query, idempotencyKey, networkRetries = 0 } = {}) {
    const url = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(query || {})) if (v != null) url.searchParams.set(k, String(v));
    let refreshed = false;
    let limited = 0;
    let dropped = 0;
    for (;;) {
      const token = await this.tokens.get();
      const headers = { Authorization: `Bearer ${token}`, Accept: "application/json" };
      if (body !== undefined) headers["Content-Type"] = "application/json";
      if (idempotencyKey) headers["Idempotency-Key"] = idempotencyKey;
      let response;
      try {
        response = await fetch(url, {
          method, headers, body: body === undefined ? undefined : JSON.stringify(body),
          mode: "cors", credentials: "omit", cache: "no-store",
        });
      } catch (err) {
        if (dropped < networkRetries) {
          await new Promise((r) => setTimeout(r, 400 * 2 ** dropped++));
          continue;
        }
        throw new ChatError("network", String((err && err.message) || err));
      }
      let payload = null;
      try {
        payload = await response.json();
      } catch {
        payload = null;
      }
      if (response.ok && payload && payload.status === "success") return payload.data;
      if (response.status === 401 && !refreshed) {
        refreshed = true;
        this.tokens.invalidate(token);
        continue;
      }
      const error = (payload && payload.error) || {};
      const retryAfter = Number(response.headers.get("retry-after")) || undefined;
      // Rate limited: a read, or a POST with its Idempotency-Key, is safe to send again.
      if (response.status === 429 && limited < 2 && (retryAfter || 1) <= 10 && (method === "GET" || idempotencyKey)) {
        limited++;
        await new Promise((r) => setTimeout(r, (retryAfter || 1) * 1000));
        continue;
      }
      throw new ChatError("api", error.message || `HTTP ${response.status}`, {
        code: error.code || (response.status >= 500 ? "internal_error" : "http_error"),
        status: response.status, details: error.details, retryAfter,
      });
    }
  }

  get(path, options) {
    return this.request("GET", path, options);
  }

  post(path, body, options = {}) {
    return this.request("POST", path, { ...options, body, idempotencyKey: options.idempotencyKey ?? newKey() });
  }
}
