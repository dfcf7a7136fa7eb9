// The JS client against a real Heddle server started by tests/typed_api/test_js_client.py, which
// passes the server, a workspace key, an agent with a `confirm` tool and a direct-mode token.
import { test } from "node:test";
import assert from "node:assert/strict";

import {
  AuthenticationError, ConflictError, Heddle, InvalidRequestError, NotFoundError, RunWaitTimeout,
} from "../src/index.js";

const env = JSON.parse(process.env.HEDDLE_JS_TEST ?? "{}");
const skip = !env.baseUrl && "needs HEDDLE_JS_TEST (run through pytest)";

test("relay: a full conversation with awaiting_input and an outcome", { skip }, async () => {
  const client = new Heddle({ baseUrl: env.baseUrl, apiKey: env.apiKey, subject: "web:js-relay" });
  const ws = await client.workspace();
  assert.equal(ws.id, env.workspaceId);
  const found = await client.identify({ identifier: "DEUTDEFF" });
  assert.equal(found.result, "identified");
  assert.equal(found.institution.address.country, "DE");

  const asked = await client.loom.send({ agent: env.agent, content: "ask: Which account?" });
  let run = await asked.wait();
  assert.equal(run.state, "awaiting_input");
  assert.deepEqual(run.pending, { type: "input", question: "Which account?" });
  const answered = await client.loom.postMessage(asked.threadId, "The savings one");
  assert.equal(answered.runId, asked.runId);
  run = await answered.wait({ until: ["closed", "failed"] });
  assert.equal(run.state, "closed");
  assert.equal(run.latest_message.content, "You said: The savings one");

  const transfer = await client.loom.postMessage(asked.threadId, 'call: transfer {"amount": 5}');
  run = await transfer.wait();
  assert.equal(run.state, "awaiting_outcome");
  const [call] = run.pending.tool_calls;
  await assert.rejects(client.loom.postMessage(asked.threadId, "hello?"), (err) => {
    assert.ok(err instanceof ConflictError);
    assert.equal(err.code, "run_active");
    assert.equal(err.status, 409);
    assert.equal(err.details.run_id, run.id);
    return true;
  });
  const after = await client.loom.postOutcome(run.id, { toolCallId: call.id, state: "occurred", detail: { bank_ref: "B1" } });
  assert.equal(after.id, run.id);
  run = await transfer.wait({ until: ["closed", "failed"] });
  assert.equal(run.state, "closed");
  const trace = await client.loom.getTrace(run.id);
  assert.deepEqual(trace.turns[0].tool_calls[0].outcome.detail, { bank_ref: "B1" });

  const threads = await client.loom.listThreads();
  assert.deepEqual(threads.items.map((t) => t.id), [asked.threadId]);
  const messages = await client.loom.listMessages(asked.threadId);
  assert.deepEqual(messages.items.slice(0, 3).map((m) => m.role), ["user", "assistant", "user"]);
});

test("relay: approval, cancel and thread erasure", { skip }, async () => {
  const client = new Heddle({ baseUrl: env.baseUrl, apiKey: env.apiKey, subject: "web:js-control" });
  const handle = await client.loom.send({ agent: env.approveAgent, content: "call: pay {}" });
  let run = await handle.wait();
  assert.equal(run.state, "awaiting_input");
  assert.equal(run.pending.type, "approval");
  const [call] = run.pending.tool_calls;
  await client.loom.approve(run.id, { toolCallId: call.id, approved: true });
  run = await handle.wait({ until: ["closed", "failed"] });
  assert.equal(run.state, "closed");

  const waiting = await client.loom.postMessage(handle.threadId, "ask: Anything else?");
  assert.equal((await waiting.wait()).state, "awaiting_input");
  const cancelled = await client.loom.cancel(waiting.runId);
  assert.equal(cancelled.state, "failed");
  assert.equal(cancelled.error.code, "cancelled");
  const detail = await client.loom.getThread(handle.threadId);
  assert.equal(detail.latest_run.id, waiting.runId);
  const gone = await client.loom.deleteThread(handle.threadId);
  assert.equal(gone.deleted, true);
  await assert.rejects(client.loom.getThread(handle.threadId), (err) => err instanceof NotFoundError);
});

test("errors carry code, message and status, by family", { skip }, async () => {
  const client = new Heddle({ baseUrl: env.baseUrl, apiKey: env.apiKey, subject: "web:js-errors" });
  await assert.rejects(client.loom.getRun(crypto.randomUUID()), (err) =>
    err instanceof NotFoundError && err.code === "not_found" && err.status === 404 && Boolean(err.requestId));
  await assert.rejects(client.identify({ identifier: "GB00WEST12345698765432" }), (err) =>
    err instanceof InvalidRequestError && err.code === "invalid_identifier");
  const wrong = new Heddle({ baseUrl: env.baseUrl, apiKey: "sk_live_" + "x".repeat(43) });
  await assert.rejects(wrong.workspace(), (err) => err instanceof AuthenticationError && err.status === 401);
  const asked = await client.loom.send({ agent: env.agent, content: "ask: Still there?" });
  assert.equal((await asked.wait()).state, "awaiting_input");
  await assert.rejects(asked.wait({ until: ["closed"], timeoutMs: 400 }), (err) =>
    err instanceof RunWaitTimeout && err.run.state === "awaiting_input");
});

test("direct: getToken, a conversation and realtime events through pusher-js", { skip }, async () => {
  let minted = 0;
  const client = new Heddle({ baseUrl: env.baseUrl, getToken: async () => { minted += 1; return env.token; } });
  const thread = await client.loom.openThread(env.agent);
  assert.equal(thread.subject, env.directSubject);
  const events = [];
  let closed;
  const done = new Promise((resolve) => { closed = resolve; });
  const sub = await client.loom.subscribe(thread.id, (name, data) => {
    events.push([name, data.state ?? data.role]);
    if (name === "run.updated" && data.state === "closed") closed();
  });
  try {
    const asked = await client.loom.postMessage(thread.id, "ask: Which account?");
    const run = await asked.wait();
    assert.equal(run.state, "awaiting_input");
    const answered = await client.loom.postMessage(thread.id, "Current");
    assert.equal((await answered.wait({ until: ["closed"] })).latest_message.content, "You said: Current");
    await Promise.race([done, new Promise((_, reject) => setTimeout(() => reject(new Error("no closed event")), 5000))]);
    assert.ok(events.some(([n, s]) => n === "run.updated" && s === "awaiting_input"));
    assert.ok(events.some(([n, r]) => n === "message.created" && r === "assistant"));
  } finally {
    sub.unsubscribe();
  }
  assert.ok(minted >= 5);
  assert.throws(() => client.loomHeaders("web:other"), TypeError);
});

test("relay: upload a file and send it with a message", { skip }, async () => {
  const client = new Heddle({ baseUrl: env.baseUrl, apiKey: env.apiKey, subject: "web:js-files" });
  const thread = await client.loom.openThread(env.agent);
  const csv = new TextEncoder().encode("date,amount\n2026-01-02,12.50\n");
  const file = await client.loom.upload(thread.id, csv, { name: "export.csv" });
  assert.equal(file.content_type, "text/csv");
  assert.equal(file.size, csv.length);
  assert.deepEqual(await client.loom.getAttachment(file.id), file);
  await assert.rejects(client.loom.upload(thread.id, new TextEncoder().encode("<svg onload=x></svg>"),
    { name: "x.svg" }), (err) => err.code === "attachment_type_not_allowed" && err.status === 415);
  const sent = await client.loom.postMessage(thread.id, "", { attachments: [file.id] });
  const run = await sent.wait({ until: ["closed", "failed"] });
  assert.match(run.latest_message.content, /export\.csv/);
});
