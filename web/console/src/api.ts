// The console's one door to /console/api: the envelope, the CSRF header and readable errors.
// Every mutation carries X-CSRF-Token (from GET /me); a 401 flips the app to its signed-out view.

export const API = "/console/api";

export interface FieldDetail { location?: string; field?: string | null; message?: string; type?: string }

export class ApiError extends Error {
  constructor(public code: string, message: string, public status: number, public details: unknown = null,
              public requestId: string | null = null) {
    super(message);
  }
}

let csrfToken: string | null = null;
let clockSkewMs = 0; // server time minus browser time, from the Date header of the last answer

// The server's idea of now (to the second), so that a poll's first watermark never runs ahead of it.
export function serverNow(): number { return Date.now() + clockSkewMs; }
let onUnauthenticated: () => void = () => {};

export function setCsrf(token: string | null) { csrfToken = token; }
export function onSignedOut(fn: () => void) { onUnauthenticated = fn; }

type Query = Record<string, string | number | undefined | null>;

export function qs(query: Query = {}): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== "") p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : "";
}

export async function api<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && method !== "HEAD" && csrfToken) headers["X-CSRF-Token"] = csrfToken;
  let res: Response;
  try {
    res = await fetch(API + path, { method, headers, credentials: "same-origin",
                                    body: body === undefined ? undefined : JSON.stringify(body) });
  } catch {
    throw new ApiError("network_error", "The Heddle server could not be reached. Check that it is running, then try again.", 0);
  }
  let payload: any = null;
  const text = await res.text();
  try { payload = text ? JSON.parse(text) : null; } catch { payload = null; }
  const requestId = res.headers.get("Request-Id");
  const date = Date.parse(res.headers.get("Date") || "");
  if (!isNaN(date)) clockSkewMs = date - Date.now();
  if (payload && payload.status === "success") return payload.data as T;
  const err = payload && payload.status === "error" && payload.error
    ? new ApiError(payload.error.code, payload.error.message || "", res.status, payload.error.details ?? null, requestId)
    : new ApiError(res.ok ? "bad_response" : "http_" + res.status,
                   `The server answered ${res.status} ${res.statusText || ""} without a readable body.`.trim(), res.status,
                   null, requestId);
  if (err.code === "console_unauthenticated") onUnauthenticated();
  throw err;
}

// Sentences a person can act on; the API's own message follows when it adds something.
const WORDS: Record<string, string> = {
  console_unauthenticated: "You are signed out. Open a new login link to continue.",
  csrf_failed: "This page's security token is out of date. Reload the page and try again.",
  not_found: "That item does not exist, or it was removed.",
  invalid_request: "Some fields are not valid.",
  insufficient_credits: "The workspace does not have enough credits for this.",
  invalid_identifier: "That identifier is not valid for its payment rail.",
  ambiguous_identifier: "That identifier fits several payment rails. Choose a rail (and a country) and try again.",
  rate_limited: "Too many requests right now. Wait a few seconds and try again.",
  internal_error: "The server hit an unexpected error.",
  service_unavailable: "The server is not ready (its database may be unavailable).",
  forbidden: "You are not allowed to do that.",
  agent_not_found: "That agent does not exist in this workspace.",
  payload_too_large: "That is too large to send.",
  method_not_allowed: "The server does not support this action here (the console may be newer than the server).",
};

export function describe(err: unknown): { title: string; detail: string; fields: string[]; code: string; requestId: string | null } {
  if (!(err instanceof ApiError)) {
    return { title: "Something went wrong in the console.", detail: String((err as Error)?.message || err), fields: [], code: "client_error", requestId: null };
  }
  const title = WORDS[err.code] || (err.message || `The request failed (${err.code}).`);
  const detail = WORDS[err.code] && err.message && err.message !== title ? err.message : "";
  const fields: string[] = [];
  if (Array.isArray(err.details)) {
    for (const d of err.details as FieldDetail[]) {
      // A detail that only repeats the message (an agent file's error names its own place,
      // "agent.yaml: tools.0.builtin: …") is not said twice.
      if (!d || typeof d !== "object" || !d.message || d.message === err.message || detail.endsWith(d.message)) continue;
      fields.push(d.field && !d.message.startsWith(d.field) ? `${d.field}: ${d.message}` : d.message);
    }
  } else if (err.details && typeof err.details === "object") {
    for (const [k, v] of Object.entries(err.details as Record<string, unknown>)) {
      // {field: "identifier"} only names the field the message is about: nothing to add.
      if (typeof v === "string" && !["field", "location", "type"].includes(k)) fields.push(`${k}: ${v}`);
    }
  }
  // The server's message often repeats its one field error: say it once.
  const shown = fields.filter((f) => f !== detail && f !== title && !detail.endsWith(f));
  // An agent file's problems come as one line ("agent.yaml: a; b"): one list item each.
  const file = detail.match(/^([\w.-]+\.(?:ya?ml|json)): (.+)$/s);
  if (file && shown.length === 0) {
    return { title, detail: `In ${file[1]}:`, fields: file[2].split("; "), code: err.code, requestId: err.requestId };
  }
  return { title, detail, fields: shown, code: err.code, requestId: err.requestId };
}
