// wait() follows the run's Server-Sent Events when the server offers them (docs/streaming-and-webhooks.md), from
// a local node:http server speaking that format; and polls when it does not.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";

import { Heddle, RunWaitTimeout } from "../src/index.js";

const RUN_ID = "4b0d6c1e-6a53-4a53-9d0c-2f5a8f0e7c11";
const run = (state) => ({ id: RUN_ID, thread_id: "t", state, terminal: state === "closed", cost_credits: 0,
  connection: null, latest_message: null, pending: null, error: null, created_at: "x", updated_at: "x" });

async function serve(withEvents) {
  const seen = { gets: 0, streams: [] };
  const server = createServer((req, res) => {
    if (req.url === `/v1/loom/runs/${RUN_ID}`) {
      seen.gets += 1;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ status: "success", data: run("running") }));
    } else if (withEvents && req.url === `/v1/loom/runs/${RUN_ID}/events`) {
      seen.streams.push(req.headers);
      res.writeHead(200, { "content-type": "text/event-stream" });
      const events = [["run.updated", run("running")], ["message.delta", { delta: "Hi" }], ["run.updated", run("closed")]];
      events.forEach(([name, data], i) => setTimeout(() => {
        res.write(`id: ${i + 1}\nevent: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
        if (i === events.length - 1) res.end();
      }, 50 * (i + 1)));
    } else {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ status: "error", error: { code: "not_found", message: "No route" } }));
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { seen, server, url: `http://127.0.0.1:${server.address().port}` };
}

test("wait() reads the run's event stream", async () => {
  const { seen, server, url } = await serve(true);
  try {
    const client = new Heddle({ baseUrl: url, apiKey: "sk_test", subject: "web:alice" });
    const done = await client.loom.wait(RUN_ID, { until: ["closed"], timeoutMs: 5000 });
    assert.equal(done.state, "closed");
    assert.equal(seen.gets, 1);
    assert.equal(seen.streams[0].accept, "text/event-stream");
    assert.equal(seen.streams[0]["service-subject"], "web:alice");
  } finally {
    server.close();
  }
});

test("wait() polls a server without the stream", async () => {
  const { seen, server, url } = await serve(false);
  try {
    const client = new Heddle({ baseUrl: url, token: "a.b.c", pollIntervalMs: 10 });
    await assert.rejects(client.loom.wait(RUN_ID, { until: ["closed"], timeoutMs: 400 }),
      (err) => err instanceof RunWaitTimeout && err.run.state === "running");
    assert.ok(seen.gets > 3);
    assert.equal(seen.streams.length, 0);
  } finally {
    server.close();
  }
});
