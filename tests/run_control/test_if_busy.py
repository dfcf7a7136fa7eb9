"""`if_busy` on message posts: reject (409), enqueue (runs start in order), interrupt."""

from __future__ import annotations

from run_control.run_control_kit import EventListener, wait_until
from support.loom import one_message_at_a_time


def _data(resp) -> dict:
    assert resp.status_code == 202, resp.text
    return resp.json()["data"]


def test_default_rejects_while_busy(caller, toolhost):
    thread = caller.thread()
    busy = _data(caller.post(thread, "call: slow {}"))["run_id"]
    toolhost.wait_for_call("/tools/slow")
    for extra in ({}, {"if_busy": "reject"}):
        resp = caller.post(thread, "hello?", **extra)
        assert resp.status_code == 409 and resp.json()["error"]["code"] == "run_active"
        assert resp.json()["error"]["details"]["run_id"] == busy
    bad = caller.post(thread, "hello?", if_busy="later")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_request"
    toolhost.release()
    assert caller.wait(busy)["state"] == "closed"


def test_enqueue_three_messages_behind_a_running_run(caller, toolhost, server):
    thread = caller.thread()
    with EventListener(server, caller.headers(), thread) as events:
        first = _data(caller.post(thread, "call: slow {}"))["run_id"]
        toolhost.wait_for_call("/tools/slow")
        queued = [_data(caller.post(thread, f"message {n}", if_busy="enqueue")) for n in (1, 2, 3)]
        assert [q["queue_position"] for q in queued] == [1, 2, 3]
        assert all(q["queued"] and q["run"]["state"] == "queued" and not q["run"]["terminal"] for q in queued)
        ids = [q["run_id"] for q in queued]
        assert caller.run(ids[0])["state"] == "queued"
        # a plain message is still refused while the queue waits, naming the busy run
        refused = caller.post(thread, "me too")
        assert refused.status_code == 409 and refused.json()["error"]["details"]["run_id"] == first
        # queued messages join the thread only when their run starts
        assert [m["content"] for m in caller.messages(thread)] == ["call: slow {}"]
        toolhost.release()
        for run_id in ids:
            assert caller.wait(run_id, states=("closed", "failed"))["state"] == "closed"
        events.wait_for(lambda n, d: n == "run.updated" and d["id"] == ids[2] and d["state"] == "closed")
    messages = caller.messages(thread)
    users = [m for m in messages if m["role"] == "user"]
    assert [m["content"] for m in users] == ["call: slow {}", "message 1", "message 2", "message 3"]
    assert [m["id"] for m in users[1:]] == [q["message_id"] for q in queued]  # the ids the 202 gave
    assert [m["run_id"] for m in users] == [first, *ids]
    # each run replied before the next one started: user, assistant, user, assistant...
    assert [m["role"] for m in messages] == ["user", "assistant"] * 4
    traces = [caller.trace(run_id) for run_id in ids]
    starts = [t["control"]["queue"]["started_at"] for t in traces]
    assert starts == sorted(starts) and traces[0]["opened_at"] >= caller.trace(first)["closed_at"]
    assert [t["control"]["queue"]["position"] for t in traces] == [1, 2, 3]
    # realtime: each queued run was announced queued, then running, then closed, in order
    states = [(d["id"], d["state"]) for n, d in events.events if n == "run.updated" and d["id"] in ids]
    for run_id in ids:
        mine = [s for r, s in states if r == run_id]
        assert mine[0] == "queued" and mine[-1] == "closed" and "running" in mine
    running_order = [r for r, s in states if s == "running"]
    assert running_order == ids
    created = [d["content"] for n, d in events.events if n == "message.created" and d["role"] == "user"]
    assert created[-3:] == ["message 1", "message 2", "message 3"]


def test_cancelling_a_queued_run_keeps_its_message_and_the_rest_of_the_queue(caller, toolhost):
    thread = caller.thread()
    first = _data(caller.post(thread, "call: slow {}"))["run_id"]
    toolhost.wait_for_call("/tools/slow")
    a, b = (_data(caller.post(thread, text, if_busy="enqueue"))["run_id"] for text in ("a", "b"))
    resp = caller.cancel(a)
    assert resp.status_code == 200 and resp.json()["data"]["error"]["code"] == "cancelled"
    assert caller.trace(a)["control"]["cancelled"]["from_state"] == "queued"
    toolhost.release()
    assert caller.wait(b, states=("closed",))["state"] == "closed"
    assert caller.run(first)["state"] == "closed" and caller.run(a)["state"] == "failed"
    users = [(m["content"], m["run_id"]) for m in caller.messages(thread) if m["role"] == "user"]
    assert users == [("call: slow {}", first), ("a", a), ("b", b)]


def test_interrupt_cancels_the_active_run_and_starts_the_new_one(caller, toolhost, server):
    thread = caller.thread()
    with EventListener(server, caller.headers(), thread) as events:
        old = _data(caller.post(thread, "call: slow {}"))["run_id"]
        toolhost.wait_for_call("/tools/slow")
        waiting = _data(caller.post(thread, "queued one", if_busy="enqueue"))["run_id"]
        new = _data(caller.post(thread, "call: balance {}", if_busy="interrupt"))
        assert new["run"]["state"] == "running" and new.get("queued") is None
        assert caller.wait(new["run_id"], states=("closed",))["state"] == "closed"
        events.wait_for(lambda n, d: n == "run.updated" and d["id"] == old and d["state"] == "failed")
    for run_id in (old, waiting):
        run = caller.trace(run_id)
        assert run["state"] == "failed" and run["error"]["code"] == "cancelled"
        assert "Interrupted" in run["error"]["message"] and run["control"]["cancelled"]["by"]["mode"] == caller.mode
    # the slow call that was in flight is still recorded once released
    toolhost.release()
    wait_until(lambda: caller.trace(old)["turns"][0]["tool_calls"][0]["status"] == "succeeded",
               what="the in-flight call to be recorded")
    assert caller.run(old)["state"] == "failed"
    users = [m["content"] for m in caller.messages(thread) if m["role"] == "user"]
    assert users == ["call: slow {}", "queued one", "call: balance {}"]  # nothing lost


def test_a_message_answers_a_question_whatever_if_busy_says(caller, toolhost):
    thread = caller.thread()
    asked = _data(caller.post(thread, "ask: colour?"))["run_id"]
    caller.wait(asked)
    answer = _data(caller.post(thread, "blue", if_busy="interrupt"))
    assert answer["run_id"] == asked
    assert caller.wait(asked, states=("closed",))["latest_message"]["content"] == "You said: blue"


def test_another_subject_cannot_post_to_the_thread(caller, toolhost):
    thread = caller.thread()
    for mode in ("enqueue", "interrupt"):
        resp = caller.post(thread, "hi", subject="web:mallory", if_busy=mode)
        assert resp.status_code == 404 and resp.json()["error"]["code"] == "not_found"


def test_concurrent_enqueues_are_all_kept_and_run_one_at_a_time(caller, toolhost):
    from concurrent.futures import ThreadPoolExecutor

    thread = caller.thread()
    first = _data(caller.post(thread, "call: slow {}"))["run_id"]
    toolhost.wait_for_call("/tools/slow")
    with ThreadPoolExecutor(6) as pool:
        posted = list(pool.map(lambda n: _data(caller.post(thread, f"m{n}", if_busy="enqueue")), range(6)))
    assert sorted(p["queue_position"] for p in posted) == [1, 2, 3, 4, 5, 6]
    toolhost.release()
    for p in posted:
        assert caller.wait(p["run_id"], states=("closed",), timeout=20)["state"] == "closed"
    messages = caller.messages(thread)
    assert [m["role"] for m in messages] == ["user", "assistant"] * 7  # never two runs at once
    by_position = [p["message_id"] for p in sorted(posted, key=lambda p: p["queue_position"])]
    assert [m["id"] for m in messages if m["role"] == "user"][1:] == by_position  # in queue order
    assert caller.run(first)["state"] == "closed"


def test_messages_that_start_no_run_give_their_permits_back(caller, toolhost, server):
    # One permit, held for a minute unless given back (heddle/loom/arrival_order.py): each POST
    # below would wait past the client's timeout behind a message that kept it.
    with one_message_at_a_time(server) as given:
        thread = caller.thread()
        first = _data(caller.post(thread, "call: slow {}"))["run_id"]  # its run hands the permit on
        toolhost.wait_for_call("/tools/slow")
        queued = [_data(caller.post(thread, f"message {n}", if_busy="enqueue"))["run_id"] for n in (1, 2)]
        refused = caller.post(thread, "me too")  # 409: the request's error gives it back
        assert refused.status_code == 409 and refused.json()["error"]["code"] == "run_active"
        queued.append(_data(caller.post(thread, "message 3", if_busy="enqueue"))["run_id"])
        toolhost.release()
        for run_id in (first, *queued):
            assert caller.wait(run_id, states=("closed", "failed"))["state"] == "closed"
    # only the first message's run carried its permit; the others went back with their requests
    assert [p.taken for p in given] == [True, False, False, False, False]
    assert all(p.released for p in given)
