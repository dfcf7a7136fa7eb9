// Cards for a run that waits on the person: approve/deny a tool call before it is made
// (`pending.type = "approval"`), or confirm whether a started action went through
// (`awaiting_outcome`, the outcome a direct-mode caller may post).

// After a reload the cards of answered calls are rebuilt from the runs' traces (the thread's own
// state over the API): only the latest RESTORE_RUNS runs, one request each, so that opening a
// long conversation stays within the per-subject rate limit (opening costs at most 6 other
// requests; the default limit is 10 per second).
import { label } from "./text.js";

const pretty = (name) => String(name || "action").replace(/_/g, " ");
const RESTORE_RUNS = 4;
const RESTORE_RETRIES = 3;
const RESTORE_RETRY_MS = 3000;
const enc = encodeURIComponent;

// The tool's risk, in the person's words (the agent file's `risk` is an operator's term): a note
// under the details, not one of them.
const CARE = {
  high: "This may not be reversible, so make sure the details are right.",
  medium: "Make sure the details are right.",
};

function fields(call) {
  return Object.entries(call.args || {}).map(([k, v]) => [label(k), typeof v === "string" ? v : JSON.stringify(v)]);
}

// What was chosen on a card, from a tool call as the trace has it.
function approvalResult(call) {
  const a = call.approval || {};
  if (a.approved) return "Approved.";
  if (call.result && call.result.message_id) return "Declined: you sent a message instead.";
  if (a.reason === "the run was cancelled") return "Declined: the reply was stopped.";
  return "Denied.";
}

function outcomeResult(call) {
  return call.outcome.state === "occurred" ? "Confirmed: it went through." : "Marked as failed.";
}

export class Cards {
  constructor(chat) {
    this.chat = chat;
    this.open = new Map(); // tool call id -> {card, runId}
  }

  /** Show a card for each call the run waits on; settle cards of calls no longer pending. */
  sync(run) {
    const pending = run && run.pending && (run.pending.type === "approval" || run.pending.type === "outcome")
      ? run.pending.tool_calls.filter((c) => c.status === "awaiting_approval" || c.status === "awaiting_outcome")
      : [];
    const ids = new Set(pending.map((c) => c.id));
    for (const [id, entry] of this.open) {
      if (!ids.has(id) && (!run || entry.runId === run.id || run.terminal)) {
        // The run's update may arrive before our own POST's answer: say what was chosen.
        if (!entry.answered) entry.card.done(entry.choice || (run && run.terminal && run.state === "failed" ? "No longer needed: the reply stopped." : "Answered."));
        this.open.delete(id);
      }
    }
    let first = null;
    for (const call of pending) {
      if (this.open.has(call.id)) continue;
      const entry = run.pending.type === "approval" ? this.approval(run, call) : this.outcome(run, call);
      this.open.set(call.id, entry);
      first = first || entry;
    }
    // Move focus to a new card only when the person is already in the widget (never steal it
    // from the page); the heading is focused, so nothing is approved by a stray Enter.
    if (first && this.chat.view.hasFocus()) {
      first.card.title.focus({ preventScroll: true });
      this.chat.view.reveal(first.card.el);
    }
  }

  /** Rebuild the answered cards of the latest runs (after a reload), each after the message
   * that started its run; a card still waiting is the live one sync() shows. */
  async restore(only = null, attempt = 0) {
    const { chat } = this;
    let runs = [];
    for (const el of chat.view.log.querySelectorAll(".hc-user[data-run]")) {
      if (el.dataset.run && !runs.some((r) => r.id === el.dataset.run)) runs.push({ id: el.dataset.run, el });
    }
    runs = only ? runs.filter((r) => only.has(r.id)) : runs.slice(-RESTORE_RUNS);
    const again = new Set();
    for (const run of runs) {
      let trace;
      try {
        trace = await chat.api.get(`/v1/loom/runs/${enc(run.id)}/trace`);
      } catch (err) {
        if (err.kind === "network" || err.kind === "token") throw err;
        // A server starting up (503) or busy (429, 5xx) answers later: those cards are read
        // again in a few seconds (a card missing after a server restart, issue 41). An erased
        // or unreadable run (404, 403): its cards are not rebuilt, the chat goes on.
        if (err.status >= 500 || err.status === 429) again.add(run.id);
        continue;
      }
      let after = run.el;
      for (const call of (trace.turns || []).flatMap((t) => t.tool_calls || [])) {
        if (this.open.has(call.id)) continue;
        const answered = call.approval && "approved" in call.approval;
        if (!answered && !(call.interaction === "confirm" && call.outcome)) continue;
        const card = answered
          ? chat.view.card({ heading: `Approve “${pretty(call.name)}”?`, fields: fields(call), actions: [], after })
          : chat.view.card({ heading: `Did “${pretty(call.name)}” go through?`, fields: fields(call), actions: [], after });
        card.done(answered ? approvalResult(call) : outcomeResult(call));
        card.el.dataset.restored = "true";
        after = card.el;
      }
    }
    if (again.size && attempt < RESTORE_RETRIES && !chat.destroyed) {
      setTimeout(() => this.restore(again, attempt + 1).catch(() => {}), RESTORE_RETRY_MS * (attempt + 1));
    }
  }

  /** A message sent while calls await approval declines them (Heddle's rule): say so on the cards. */
  declineByMessage() {
    for (const entry of this.open.values()) {
      if (entry.kind === "approval" && !entry.answered) entry.choice = "Declined: you sent a message instead.";
    }
  }

  approval(run, call) {
    const entry = { runId: run.id, answered: false, kind: "approval" };
    entry.card = this.chat.view.card({
      heading: `Approve “${pretty(call.name)}”?`,
      text: "The assistant would like to do this for you. Nothing happens unless you approve.",
      fields: fields(call),
      note: CARE[call.risk],
      actions: [
        { label: "Approve", primary: true, onClick: () => this.answer(entry, call, "approval", { approved: true }, "Approved.") },
        { label: "Deny", onClick: () => this.answer(entry, call, "approval", { approved: false }, "Denied.") },
      ],
    });
    return entry;
  }

  outcome(run, call) {
    const entry = { runId: run.id, answered: false };
    const ref = call.patch_ref ? ` (reference ${call.patch_ref})` : "";
    entry.card = this.chat.view.card({
      heading: `Did “${pretty(call.name)}” go through?`,
      text: call.patch_ref
        ? `It was started${ref}, but its result is not known yet. Did it go through?`
        : "Its result is not known yet. Did it happen?",
      fields: fields(call),
      actions: [
        { label: "Yes, it went through", primary: true, onClick: () => this.answer(entry, call, "outcome", { state: "occurred" }, "Confirmed: it went through.") },
        { label: "No, it failed", onClick: () => this.answer(entry, call, "outcome", { state: "failed" }, "Marked as failed.") },
      ],
    });
    return entry;
  }

  async answer(entry, call, kind, body, result) {
    const { chat } = this;
    const hadFocus = chat.view.hasFocus();
    entry.card.busy(true);
    entry.choice = result;
    try {
      const run = await chat.api.post(`/v1/loom/runs/${entry.runId}/${kind}`, { tool_call_id: call.id, ...body },
        { networkRetries: 2 });
      entry.answered = true;
      entry.card.done(result);
      chat.emit(kind, { run_id: entry.runId, tool_call_id: call.id, ...body });
      chat.handleRun(run);
    } catch (err) {
      entry.card.busy(false);
      entry.choice = null;
      if (err.code === "run_not_awaiting_approval" || err.code === "run_not_awaiting_outcome") {
        entry.answered = true;
        entry.card.done("Already answered.");
        chat.catchUp();
      } else {
        chat.fail(err, () => this.answer(entry, call, kind, body, result));
        if (hadFocus) entry.card.buttons[0].focus();
        return;
      }
    }
    if (hadFocus) {
      const next = [...this.open.values()].find((e) => !e.answered);
      (next ? next.card.title : chat.view.input).focus();
    }
  }
}
