"""POST /v1/identify through the real server: results, billing, errors, attribution."""

from __future__ import annotations

import pytest

from heddle.money import MICRO
from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run
from support.tenants import make_tenant


def identify(http, tenant, body, **headers):
    return http.post("/v1/identify", json=body, headers={**tenant.headers(subject=None), **headers})


@pytest.mark.parametrize(("body", "rail", "name_part"), [
    ({"identifier": "DEUTDEFF"}, "swift", "Deutsche Bank"),
    ({"identifier": "DE89370400440532013000"}, "iban", "Commerzbank"),
    ({"identifier": "021000021"}, "routing_number", "JPMorgan"),
    ({"identifier": "SBIN0000300"}, "ifsc", "State Bank of India"),
])
def test_identified_results_are_billed_once(http, tenant, body, rail, name_part):
    before = tenant.balance_micro()
    resp = identify(http, tenant, body)
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert data["result"] == "identified" and data["rail"] == rail
    assert name_part.lower() in data["institution"]["name"].lower()
    assert data["identified_at"].endswith("Z") and data["reachable_rails"]
    assert "account" not in data  # only when account_number was sent
    assert before - tenant.balance_micro() == MICRO
    assert tenant.balance_micro() == tenant.ledger_sum()


def test_not_found_and_unsupported_are_free(http, tenant):
    before = tenant.balance_micro()
    nf = identify(http, tenant, {"identifier": "ZZZZDEFF"})  # well-formed BIC, no such bank
    assert nf.status_code == 200 and nf.json()["data"]["result"] in ("not_found", "unsupported")
    assert "institution" not in nf.json()["data"] and "identified_at" not in nf.json()["data"]
    assert tenant.balance_micro() == before


@pytest.mark.parametrize(("body", "code"), [
    ({"identifier": "DE00370400440532013000"}, "invalid_identifier"),  # bad IBAN check digits
    ({"identifier": "021000022", "rail": "routing_number"}, "invalid_identifier"),  # bad ABA check digit
    ({"identifier": "123456"}, "ambiguous_identifier"),  # sort code? Ghana? NUBAN institution?
    ({"identifier": ""}, "invalid_request"),
    ({"identifier": "x" * 65}, "invalid_request"),
    ({"identifier": "DEUTDEFF", "rail": "bogus"}, "invalid_request"),
    ({"identifier": "DEUTDEFF", "surprise": 1}, "invalid_request"),
    ({}, "invalid_request"),
])
def test_bad_input_is_400_and_free(http, tenant, body, code):
    before = tenant.balance_micro()
    resp = identify(http, tenant, body)
    assert resp.status_code == 400 and resp.json()["error"]["code"] == code, resp.text
    assert tenant.balance_micro() == before


def test_malformed_json_and_wrong_type(http, tenant):
    resp = http.post("/v1/identify", content=b'{"identifier": ', headers={**tenant.headers(subject=None),
                                                                         "Content-Type": "application/json"})
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "invalid_request"
    resp = http.post("/v1/identify", content=b"identifier=DEUTDEFF", headers={
        **tenant.headers(subject=None), "Content-Type": "application/x-www-form-urlencoded"})
    assert resp.status_code == 415


def test_insufficient_credits_is_402_before_the_lookup(server, http):
    poor = make_tenant(server, credits=0.5)
    resp = identify(http, poor, {"identifier": "DEUTDEFF"})
    assert resp.status_code == 402 and resp.json()["error"]["code"] == "insufficient_credits"
    assert poor.balance_micro() == MICRO // 2 == poor.ledger_sum()


def test_auth_errors(http, tenant):
    assert http.post("/v1/identify", json={"identifier": "DEUTDEFF"}).status_code == 401
    resp = identify(http, tenant, {"identifier": "DEUTDEFF"}, Origin="https://app.example.com")
    assert resp.status_code == 403 and resp.json()["error"]["code"] == "secret_key_in_browser"


def test_account_number_on_a_rail_without_name_resolution(http, tenant):
    data = identify(http, tenant, {"identifier": "021000021", "account_number": "12345678"}).json()["data"]
    assert data["account"] == {"number": "12345678", "name_resolution": "not_supported"}


def test_ledger_shows_charges_only_for_identified(http, tenant):
    identify(http, tenant, {"identifier": "DEUTDEFF"})
    identify(http, tenant, {"identifier": "ZZZZDEFF"})
    identify(http, tenant, {"identifier": "DE00370400440532013000"})
    from heddle.billing import service as billing

    entries = tenant.run(lambda s: billing.recent_entries(s, tenant.workspace_id, limit=50))
    charges = [e for e in entries if e.kind == "charge"]
    assert [(e.reason, e.ref, e.amount_micro) for e in charges] == [("identify", "swift", -MICRO)]


def test_builtin_identify_tool_in_a_run_is_billed_and_attributed(server, http, tenant):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:idtool")
    run_id = post(http, h, open_thread(http, h, agent), "Where does DEUTDEFF go?")["run_id"]
    run = wait_run(http, h, run_id, states=("closed", "failed"))
    assert run["state"] == "closed" and "Deutsche Bank" in run["latest_message"]["content"]
    server.flush_request_log()
    trace = http.get(f"/v1/loom/runs/{run_id}/trace", headers=h).json()["data"]
    call = trace["turns"][0]["tool_calls"][0]
    assert call["name"] == "identify" and call["status"] == "succeeded" and call["cost_credits"] == 1
    assert call["result"]["institution"]["bic"].startswith("DEUTDEFF")
    assert trace["api_calls_total"] == 1 and trace["api_calls"][0]["path"] == "/v1/identify"
    assert trace["api_calls"][0]["auth_mode"] == "internal"
    turns = sum(t["cost_credits"] for t in trace["turns"])
    assert abs(trace["cost_credits"] - (turns + 1)) < 1e-9


def test_service_run_attributes_an_identify_call(server, http, tenant):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:attr")
    run_id = post(http, h, open_thread(http, h, agent), "ask: which?")["run_id"]
    wait_run(http, h, run_id)
    identify(http, tenant, {"identifier": "DEUTDEFF"}, **{"Service-Run": run_id})
    server.flush_request_log()
    trace = http.get(f"/v1/loom/runs/{run_id}/trace", headers=h).json()["data"]
    assert [c["path"] for c in trace["api_calls"]] == ["/v1/identify"]
