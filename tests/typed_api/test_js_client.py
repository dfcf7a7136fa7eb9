"""The JS/TS client (clients/js) in Node's test runner against a real server, and its generated
types checked to be current with the server's OpenAPI document."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from typed_api.conftest import APPROVE_TOOL

pytestmark = pytest.mark.node

JS = Path(__file__).parents[2] / "clients" / "js"
SERVER_SETTINGS = {"outbound_timeout": 2.0}


@pytest.fixture(scope="session")
def js_client() -> Path:
    """clients/js with its locked dependencies, installed once with `npm ci`."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        if os.environ.get("CI"):
            pytest.fail("the JS client tests need node and npm on PATH (CI is set, so this is an error)")
        pytest.skip("the JS client tests need node and npm on PATH")
    lock = json.loads((JS / "package-lock.json").read_text())
    installed = JS / "node_modules" / ".package-lock.json"
    if not installed.exists() or json.loads(installed.read_text()).get("packages", {}).keys() != {
            k for k in lock["packages"] if k}:
        subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=JS, check=True,
                       stdout=subprocess.DEVNULL, timeout=600)
    return JS


def test_generated_types_are_current(js_client, server, tmp_path):
    from heddle.app import document_json

    with server.client() as c:
        served = c.get("/openapi.json").json()
    committed = json.loads((js_client / "openapi.json").read_text())
    assert committed == served == json.loads(document_json()), (
        "clients/js/openapi.json is stale: run `make js-types`")
    out = tmp_path / "schema.d.ts"
    # The flags of `npm run generate` (package.json), writing elsewhere.
    generate = shlex.split(json.loads((js_client / "package.json").read_text())["scripts"]["generate"])
    generate = [str(js_client / "node_modules" / ".bin" / generate[0]), *generate[1:-1], str(out)]
    subprocess.run(generate, cwd=js_client, check=True, capture_output=True, timeout=120)
    assert out.read_text() == (js_client / "src" / "schema.d.ts").read_text(), (
        "clients/js/src/schema.d.ts is stale: run `make js-types`")
    tsc = subprocess.run([str(js_client / "node_modules" / ".bin" / "tsc"), "-p", "tsconfig.json"], cwd=js_client,
                         capture_output=True, text=True, timeout=180)
    assert tsc.returncode == 0, tsc.stdout + tsc.stderr


def test_js_client_against_a_real_server(js_client, server, tenant, toolhost):
    subject = "web:js-direct"
    approve_agent = tenant.add_agent({"name": "payer", "model_class": "scripted", "instructions": "",
                                      "tools": [APPROVE_TOOL]})
    config = {"approveAgent": approve_agent, "baseUrl": server.base_url, "apiKey": tenant.secret, "workspaceId": tenant.workspace_id,
              "agent": tenant.agent, "token": toolhost.mint_token(subject), "directSubject": subject}
    proc = subprocess.run(["node", "--test", "--test-reporter=spec", "test/"], cwd=js_client, capture_output=True,
                          text=True, timeout=180, env={**os.environ, "HEDDLE_JS_TEST": json.dumps(config)})
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "pass 7" in proc.stdout and "fail 0" in proc.stdout, proc.stdout[-2000:]


def test_redocly_lint_finds_nothing(js_client):
    """`@redocly/cli lint` with every recommended rule: no error and no warning."""
    lint = subprocess.run([str(js_client / "node_modules" / ".bin" / "redocly"), "lint", "openapi.json",
                           "--format", "json"], cwd=js_client, capture_output=True, text=True, timeout=180,
                          env={**os.environ, "REDOCLY_TELEMETRY": "off", "REDOCLY_SUPPRESS_UPDATE_NOTICE": "true"})
    report = json.loads(lint.stdout)
    assert report["totals"] == {"errors": 0, "warnings": 0, "ignored": 0}, [
        (p["ruleId"], p["message"]) for p in report["problems"]][:20]
    assert lint.returncode == 0


def test_openapi_fetch_session(js_client, server, tenant, toolhost, tmp_path):
    """openapi-typescript's types + openapi-fetch: type-checked (strict) and run against the server."""
    tsc = subprocess.run([str(js_client / "node_modules" / ".bin" / "tsc"), "-p", "tsconfig.session.json",
                          "--outDir", str(tmp_path)], cwd=js_client, capture_output=True, text=True, timeout=180)
    assert tsc.returncode == 0, tsc.stdout + tsc.stderr
    (tmp_path / "node_modules").symlink_to(js_client / "node_modules")  # openapi-fetch, for the compiled file
    config = {"baseUrl": server.base_url, "apiKey": tenant.secret, "workspaceId": tenant.workspace_id,
              "agent": tenant.agent}
    run = subprocess.run(["node", str(tmp_path / "openapi-fetch-session.mjs")], capture_output=True, text=True,
                         timeout=180, env={**os.environ, "HEDDLE_JS_TEST": json.dumps(config)})
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "1 passed, 0 failed" in run.stdout
