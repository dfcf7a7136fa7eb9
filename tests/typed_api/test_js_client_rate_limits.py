"""The JS client waits out a 429 as its Retry-After says, like the Python one (issue 30), and
refuses an empty key when it is made. Node against the real server with a tight subject limit."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from support.loom import SCRIPTED_AGENT
from typed_api.test_js_client import js_client  # noqa: F401 (fixture: clients/js installed once)

pytestmark = pytest.mark.node
SERVER_SETTINGS = {"rate_limit_per_key": "off", "rate_limit_per_subject": "3/second"}

SCRIPT = """
import { Heddle, RateLimitedError } from "./src/index.js";
const cfg = JSON.parse(process.env.HEDDLE_JS_TEST);
const out = {};
try { new Heddle({ baseUrl: cfg.baseUrl, apiKey: "" }); } catch (err) { out.emptyKey = err.message; }
const polite = new Heddle({ baseUrl: cfg.baseUrl, apiKey: cfg.apiKey, subject: "web:js-polite" });
const run = await (await polite.loom.send({ agent: cfg.agent, content: "hello" })).wait();
const started = Date.now();
out.states = [];
for (let i = 0; i < 6; i++) out.states.push((await polite.loom.getRun(run.id)).state);
out.elapsedMs = Date.now() - started;
const impatient = new Heddle({ baseUrl: cfg.baseUrl, apiKey: cfg.apiKey, subject: "web:js-polite",
                               rateLimitRetries: 0 });
try {
  for (let i = 0; i < 10; i++) await impatient.loom.getRun(run.id);
} catch (err) {
  out.error = { limited: err instanceof RateLimitedError, status: err.status, code: err.code,
                retryAfter: err.retryAfter };
}
console.log(JSON.stringify(out));
"""


def test_the_js_client_waits_out_429s_and_refuses_an_empty_key(js_client, server, tenant):  # noqa: F811
    config = {"baseUrl": server.base_url, "apiKey": tenant.secret, "agent": tenant.add_agent(SCRIPTED_AGENT)}
    proc = subprocess.run(["node", "--input-type=module", "-e", SCRIPT], cwd=js_client, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "HEDDLE_JS_TEST": json.dumps(config)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["emptyKey"].startswith("apiKey is empty: pass the workspace key")
    assert out["states"] == ["closed"] * 6 and out["elapsedMs"] >= 900
    assert out["error"] == {"limited": True, "status": 429, "code": "rate_limited", "retryAfter": out["error"]["retryAfter"]}
    assert 0 < out["error"]["retryAfter"] <= 1
