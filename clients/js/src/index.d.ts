// Types of the Heddle client. Object shapes come from schema.d.ts, generated from Heddle's
// OpenAPI document by openapi-typescript (`npm run generate`); never edit schema.d.ts by hand.
import type { components } from "./schema.js";

type S = components["schemas"];
export type Thread = S["Thread"];
export type Message = S["Message"];
export type AttachmentInfo = S["AttachmentInfo"];
export type Run = S["Run"];
export type RunState = Run["state"];
export type Trace = S["Trace"];
export type Feedback = S["Feedback"];
export type Turn = S["Turn"];
export type ToolCall = S["ToolCall"];
export type MessageAccepted = S["MessageAccepted"];
export type IdentifyRequest = S["IdentifyRequest"];
export type IdentifyResult = S["IdentifyResult"];
export type Workspace = S["Workspace"];
export type RealtimeConfig = S["RealtimeConfig"];
export type ThreadPage = S["ThreadPage"];
export type MessagePage = S["MessagePage"];
export type ErrorBody = S["ErrorBody"];
export type ThreadDetail = S["ThreadDetail"];
export type ThreadDeleted = S["ThreadDeleted"];
export type SubjectDeleted = S["SubjectDeleted"];

export interface HeddleOptions {
  baseUrl: string;
  /** Relay mode (server side only): a workspace secret `sk_…`. */
  apiKey?: string;
  /** Direct mode: a session token. */
  token?: string;
  /** Direct mode: returns a session token (called before each request; cache it). */
  getToken?: () => string | Promise<string>;
  /** Relay mode: the default `Service-Subject`, `<channel>:<id>`. */
  subject?: string;
  /** Relay mode: the default `Service-Connection`. */
  connection?: string;
  /** Retries of a failed connection (same Idempotency-Key). Default 2. */
  retries?: number;
  pollIntervalMs?: number;
  /** 429s waited out as their Retry-After says (at most 10 s each) before RateLimitedError; default 3. */
  rateLimitRetries?: number;
  fetch?: typeof fetch;
}

export interface SubjectOption { subject?: string }
export interface IdempotencyOption { idempotencyKey?: string }
export interface WaitOptions extends SubjectOption { until?: RunState[]; timeoutMs?: number }

export class HeddleError extends Error {
  code: string;
  status: number;
  details?: unknown;
  requestId?: string;
  headers?: Headers;
}
export class InvalidRequestError extends HeddleError {}
export class AuthenticationError extends HeddleError {}
export class InsufficientCreditsError extends HeddleError {}
export class PermissionDeniedError extends HeddleError {}
export class NotFoundError extends HeddleError {}
export class ConflictError extends HeddleError {}
export class RequestRefusedError extends HeddleError {}
export class RateLimitedError extends HeddleError { readonly retryAfter: number | null }
export class ServerError extends HeddleError {}
export class TransportError extends HeddleError {}
export class RunWaitTimeout extends Error { run: Run }

export class RunHandle {
  readonly threadId: string;
  readonly runId: string;
  readonly messageId: string;
  run: Run;
  wait(options?: Omit<WaitOptions, "subject">): Promise<Run>;
}

export class Loom {
  openThread(agent: string, options?: SubjectOption & IdempotencyOption): Promise<Thread>;
  listThreads(options?: SubjectOption & { agent?: string; limit?: number; after?: string }): Promise<ThreadPage>;
  postMessage(threadId: string, content: string,
    options?: SubjectOption & IdempotencyOption & { connection?: string; [extra: string]: unknown }): Promise<RunHandle>;
  send(args: { agent: string; content: string; subject?: string; connection?: string }): Promise<RunHandle>;
  upload(threadId: string, file: Blob | ArrayBuffer | Uint8Array,
    options?: SubjectOption & IdempotencyOption & { name?: string }): Promise<AttachmentInfo>;
  getAttachment(attachmentId: string, options?: SubjectOption): Promise<AttachmentInfo>;
  getThread(threadId: string, options?: SubjectOption): Promise<ThreadDetail>;
  deleteThread(threadId: string, options?: SubjectOption): Promise<ThreadDeleted>;
  deleteSubject(subject: string): Promise<SubjectDeleted>;
  listMessages(threadId: string, options?: SubjectOption & { limit?: number; after?: string }): Promise<MessagePage>;
  getRun(runId: string, options?: SubjectOption): Promise<Run>;
  getTrace(runId: string, options?: SubjectOption): Promise<Trace>;
  postOutcome(runId: string, args: SubjectOption & IdempotencyOption & {
    toolCallId: string; state: "occurred" | "failed"; detail?: Record<string, unknown> }): Promise<Run>;
  approve(runId: string, args: SubjectOption & IdempotencyOption & {
    toolCallId: string; approved: boolean; reason?: string }): Promise<Run>;
  feedback(messageId: string, args: SubjectOption & { rating: "up" | "down"; comment?: string }): Promise<Feedback>;
  withdrawFeedback(messageId: string, options?: SubjectOption): Promise<Feedback>;
  cancel(runId: string, options?: SubjectOption & IdempotencyOption): Promise<Run>;
  realtimeConfig(options?: SubjectOption): Promise<RealtimeConfig>;
  wait(runId: string, options?: WaitOptions): Promise<Run>;
  subscribe(threadId: string,
    onEvent: (name: "message.created" | "run.updated" | "message.delta", data: Message | Run | unknown) => void,
    options?: SubjectOption & { Pusher?: unknown }): Promise<{ unsubscribe(): void }>;
}

export class Heddle {
  constructor(options: HeddleOptions);
  readonly loom: Loom;
  readonly relay: boolean;
  workspace(): Promise<Workspace>;
  identify(args: IdentifyRequest & IdempotencyOption): Promise<IdentifyResult>;
  request<T = unknown>(method: string, path: string, options?: {
    body?: unknown; query?: Record<string, unknown>; headers?: Record<string, string>;
    idempotencyKey?: string | false }): Promise<T>;
}
export default Heddle;
