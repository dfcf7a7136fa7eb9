// One mounted chat: its thread, the messages shown, the run being followed (over realtime, or
// by polling while the socket is down), and what the person may do next.
import { Attachments } from "./attach.js";
import { Cards } from "./cards.js";
import { describe } from "./errors.js";
import { renderStreaming } from "./text.js";
import { attachFeedback } from "./feedback.js";
import { MemoryPanel } from "./memory.js";
import { connect } from "./realtime.js";
import { Api, ChatError, Tokens, newKey } from "./session.js";
import { View } from "./view.js";

const TERMINAL = new Set(["closed", "failed"]);
const BLOCKING = new Set(["running", "queued", "awaiting_outcome"]); // a new message would be 409 run_active
const POLL_MS = 2000;
const BLOCKED_CODES = new Set(["run_active", "outcome_first"]); // alerts true only while a run blocks

const path = (strings, ...ids) => strings.reduce((out, s, i) => out + s + (i < ids.length ? encodeURIComponent(ids[i]) : ""), "");

export class Chat {
  constructor(element, options, baseUrl) {
    this.element = element;
    this.options = options;
    this.baseUrl = baseUrl;
    this.api = new Api(baseUrl, new Tokens(options.getToken));
    this.view = new View(element, { title: options.title || "Chat", placeholder: options.placeholder || "Type a message…" });
    this.cards = new Cards(this);
    this.files = new Attachments(this);
    this.messages = new Map(); // message id -> element
    this.streams = new Map(); // message id -> {el, pieces, runId} while a reply streams
    this.unsent = []; // optimistic user bubbles not yet matched to a message id
    this.listeners = new Map();
    this.reported = new Set(); // runs whose failure was shown
    this.run = null;
    this.threadId = null;
    this.tailCursor = undefined;
    this.live = false;
    this.everLive = false;
    this.realtime = null;
    this.pollTimer = null;
    this.alertKind = null;
    this.destroyed = false;
    const { form, input, stopButton } = this.view;
    form.addEventListener("submit", (e) => { e.preventDefault(); this.submit(); });
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); this.submit(); }
    });
    stopButton.addEventListener("click", () => this.cancel());
    if (options.memory) this.memoryPanel = new MemoryPanel(this); // "What I remember" (docs/widget.md)
  }

  // ---- events for the page: element events `heddle-chat:<name>`, options.onEvent, and on() ----
  emit(name, detail) {
    if (this.destroyed) return;
    this.element.dispatchEvent(new CustomEvent(`heddle-chat:${name}`, { detail, bubbles: true, composed: true }));
    if (typeof this.options.onEvent === "function") this.options.onEvent(name, detail);
    for (const fn of this.listeners.get(name) || []) fn(detail);
  }

  on(name, fn) {
    if (!this.listeners.has(name)) this.listeners.set(name, new Set());
    this.listeners.get(name).add(fn);
    return () => this.listeners.get(name).delete(fn);
  }

  fail(err, retry) {
    if (this.destroyed) return;
    const text = describe(err);
    this.alertKind = err && err.kind;
    this.alertCode = err && err.code;
    this.view.showError(text, retry);
    this.emit("error", { kind: err && err.kind, code: err && err.code, status: err && err.status, message: text,
      reference: err && err.reference });
  }

  // ---- start: thread, history, the current run, then realtime ----
  async start() {
    this.view.clearError();
    this.view.setConnection("connecting", "Connecting…");
    try {
      await this.openThread();
      // Subscribe first, then read history: nothing falls in a gap between the two, and the
      // first subscription needs no catch-up (the per-subject rate limit is 10 requests/s).
      if (!this.realtime) await this.startRealtime();
      await this.loadMessages();
      await this.refreshRun({ initial: true });
      await this.cards.restore();
      if (this.messages.size === 0 && !this.emptyNote) this.emptyNote = this.view.notice("No messages yet. Say hello to start.");
      this.view.setHistoryLoading(false);
      this.view.scrollToEnd();
      this.emit("ready", { thread_id: this.threadId });
    } catch (err) {
      if (this.destroyed) return;
      this.view.setConnection("offline", "Not connected");
      this.fail(err, () => this.start());
    }
  }

  get storageKey() {
    return `heddle-chat:thread:${this.baseUrl}:${this.options.agent}`;
  }

  remember(id) {
    try {
      if (id) localStorage.setItem(this.storageKey, id);
      else localStorage.removeItem(this.storageKey);
    } catch { /* storage blocked: the server still finds the subject's thread */ }
  }

  async openThread() {
    if (this.threadId) return;
    let stored = this.options.thread;
    if (!stored) {
      try { stored = localStorage.getItem(this.storageKey); } catch { stored = null; }
    }
    if (stored) {
      try {
        this.thread = await this.api.get(path`/v1/loom/threads/${stored}`);
        this.threadId = stored;
        return;
      } catch (err) {
        // Someone else's thread (another login on this browser), or erased: start anew.
        if (!(err.status === 404 || err.code === "invalid_request")) throw err;
      }
    }
    const thread = await this.api.post("/v1/loom/threads", { agent: this.options.agent }, { networkRetries: 2 });
    this.threadId = thread.id;
    this.thread = null; // the create answer has no latest_run: read it with the history
    if (!this.options.thread) this.remember(thread.id);
  }

  /** Messages after the last page read (all of them the first time), in order. */
  async loadMessages() {
    let after = this.tailCursor;
    for (let page = 0; page < 100; page++) {
      const data = await this.api.get(path`/v1/loom/threads/${this.threadId}/messages`, { query: { limit: 200, after } });
      for (const message of data.items) this.addMessage(message);
      if (!data.next_cursor) break;
      after = data.next_cursor;
    }
    this.tailCursor = after;
  }

  async refreshRun({ initial = false } = {}) {
    // At start the thread read by openThread (just now) is reused: one request fewer.
    const thread = (initial && this.thread) || await this.api.get(path`/v1/loom/threads/${this.threadId}`);
    this.thread = null;
    const latest = thread.latest_run;
    if (!latest) return this.handleRun(null);
    if (this.run && this.run.id === latest.id && this.run.state === latest.state && TERMINAL.has(latest.state)) return;
    if (initial && latest.state === "closed") return this.handleRun(null); // nothing to show or do
    this.handleRun(await this.api.get(path`/v1/loom/runs/${latest.id}`), { initial });
  }

  /** After the socket was down, or while polling: nothing missed, nothing shown twice. */
  async catchUp() {
    if (this.destroyed || !this.threadId || this.catching) return;
    this.catching = true;
    try {
      // The run first, then the messages: a run that closes between the two reads has its reply
      // committed with its close, so the messages read after it include the reply. The other way
      // round, the reply of a run that closed in between was never read, and polling (which stops
      // at a closed run) never came back for it.
      await this.refreshRun();
      await this.loadMessages();
      if (this.alertKind === "network") { this.view.clearError(); this.alertKind = null; }
    } catch (err) {
      if (err.kind === "network" || err.kind === "token") this.fail(err, () => this.catchUp());
    } finally {
      this.catching = false;
    }
  }

  // ---- realtime, with polling while it is down ----
  async startRealtime() {
    let config = { enabled: false };
    try {
      config = await this.api.get("/v1/loom/realtime/config");
    } catch (err) {
      if (err.kind === "network" || err.kind === "token") throw err;
    }
    if (this.destroyed) return;
    if (!config.enabled) {
      this.view.setConnection("polling", "Checking for replies");
      return this.syncPolling();
    }
    let first;
    const subscribed = new Promise((resolve) => { first = resolve; });
    this.realtime = connect(this.api, config, this.threadId, {
      onEvent: (name, data) => this.onEvent(name, data),
      onState: (state) => this.onSocketState(state),
      onSubscribed: () => {
        this.live = true;
        this.view.setConnection("live", "Live");
        this.syncPolling();
        this.emit("connection", { state: "live" });
        // A resubscription after the socket dropped: read what was missed meanwhile.
        if (this.everLive) this.catchUp();
        this.everLive = true;
        first();
      },
      onRefused: () => {
        this.live = false;
        this.view.setConnection("polling", "Checking for replies");
        this.syncPolling();
        first();
      },
    });
    // History is read once subscribed; a socket that cannot connect soon does not hold it up
    // (its first subscription then catches up like a reconnection).
    await Promise.race([subscribed, new Promise((r) => setTimeout(r, 5000))]);
    this.everLive = true;
  }

  onSocketState(state) {
    if (state === "connected") return; // live once the channel is (re)subscribed
    this.live = false;
    if (state === "connecting") this.view.setConnection("reconnecting", this.everLive ? "Reconnecting…" : "Connecting…");
    else this.view.setConnection("reconnecting", "Connection lost, reconnecting…");
    this.emit("connection", { state });
    this.syncPolling();
  }

  syncPolling() {
    const needed = !this.destroyed && !this.live && this.run && (this.run.state === "running" || this.run.state === "queued");
    if (needed && !this.pollTimer) {
      this.pollTimer = setTimeout(async () => {
        await this.catchUp();
        this.pollTimer = null;
        this.syncPolling();
      }, POLL_MS);
    } else if (!needed && this.pollTimer) {
      clearTimeout(this.pollTimer);
      this.pollTimer = null;
    }
  }

  onEvent(name, data) {
    if (this.destroyed || !data) return;
    if (name === "message.created") this.addMessage(data);
    else if (name === "message.delta") this.addDelta(data);
    else if (name === "run.updated") this.handleRun(data);
    else if (name === "thread.deleted") this.restart();
  }

  async restart() {
    this.remember(null);
    this.realtime && this.realtime.close();
    this.realtime = null;
    Object.assign(this, { threadId: null, run: null, tailCursor: undefined, live: false, everLive: false });
    this.messages.clear();
    this.streams.clear();
    this.view.log.replaceChildren();
    this.view.notice("This conversation was deleted. A new one starts here.");
    await this.start();
  }

  // ---- what is shown ----
  addMessage(message) {
    if (this.messages.has(message.id)) return;
    if (this.emptyNote) { this.emptyNote.remove(); this.emptyNote = null; }
    let el;
    const stream = this.streams.get(message.id);
    const mine = message.role === "user" && this.unsent.find((u) => u.id === message.id || (!u.id && u.content === message.content));
    if (mine) {
      this.unsent.splice(this.unsent.indexOf(mine), 1);
      el = mine.el;
      el.classList.remove("hc-pending", "hc-failed");
      el.dataset.id = message.id;
      el.dataset.run = message.run_id || "";
    } else if (stream) {
      this.streams.delete(message.id);
      el = stream.el;
      this.view.finish(el, message.content, message.data);
    } else {
      el = this.view.message(message.role, message.content, { id: message.id, run: message.run_id, data: message.data });
    }
    this.files.show(el, message.attachments);
    this.messages.set(message.id, el);
    attachFeedback(this.api, el, message, (err) => this.view.showError(`Your feedback was not saved: ${err.message || err}`));
    this.emit("message", message);
  }

  addDelta(delta) {
    if (this.messages.has(delta.message_id)) return;
    if (delta.reset) return this.resetStream(delta);
    let stream = this.streams.get(delta.message_id);
    if (!stream) {
      stream = { pieces: [], runId: delta.run_id, el: this.view.message("assistant", "", { id: delta.message_id, streaming: true, run: delta.run_id }) };
      this.streams.set(delta.message_id, stream);
      this.view.typing.hidden = true;
    }
    stream.pieces[delta.seq] = delta.delta;
    let text = "";
    for (let i = 0; i < stream.pieces.length && stream.pieces[i] !== undefined; i++) text += stream.pieces[i];
    renderStreaming(stream.el.querySelector(".hc-text"), text);
    this.view.scrollToEnd();
    this.emit("delta", delta);
  }

  // The model call was retried after a failed attempt: the text shown so far is void. The
  // partial reply goes away and the typing indicator is back until the next attempt writes.
  resetStream(delta) {
    const stream = this.streams.get(delta.message_id);
    if (stream) {
      this.streams.delete(delta.message_id);
      stream.el.remove();
    }
    if (this.run && this.run.id === delta.run_id && !TERMINAL.has(this.run.state)) this.view.typing.hidden = false;
    this.emit("delta", delta);
  }

  handleRun(run, { initial = false } = {}) {
    if (this.destroyed) return;
    if (run && this.run && run.id !== this.run.id && Date.parse(run.created_at) < Date.parse(this.run.created_at)) return;
    if (run && this.run && run.id === this.run.id && Date.parse(run.updated_at) < Date.parse(this.run.updated_at)) return;
    this.run = run;
    const state = run ? run.state : null;
    const pending = run && run.pending ? run.pending.type : null;
    this.view.setBusy({
      typing: (state === "running" || state === "queued") && ![...this.streams.values()].some((s) => s.runId === run.id),
      stoppable: !!run && !TERMINAL.has(state),
      blocked: BLOCKING.has(state),
    });
    this.view.setHint({
      input: "The assistant asked you a question: your next message answers it.",
      approval: "Approve or deny the action above. Sending a message instead declines it.",
      outcome: "Tell the assistant whether the action above went through.",
    }[pending] || (state === "queued" ? "Your message is queued." : ""));
    this.cards.sync(run);
    // "Still working on your last message" is true only while it is: gone once the run is not.
    if (!BLOCKING.has(state) && BLOCKED_CODES.has(this.alertCode)) this.clearAlert();
    if (run && TERMINAL.has(state)) this.settled(run, initial);
    if (run) this.emit("run", run);
    this.syncPolling();
  }

  settled(run, initial) {
    for (const [id, stream] of this.streams) {
      if (stream.runId === run.id) { stream.el.remove(); this.streams.delete(id); } // never completed: dropped
    }
    if (run.state !== "failed" || this.reported.has(run.id)) return;
    this.reported.add(run.id);
    const err = new ChatError("run", run.error ? run.error.message : "", { code: run.error && run.error.code });
    err.reference = run.id;
    if (err.code === "cancelled" || initial) this.view.notice(describe(err), err.code === "cancelled" ? "info" : "error");
    else this.fail(err);
  }

  clearAlert() {
    this.view.clearError();
    this.alertKind = this.alertCode = null;
  }

  // ---- what the person does ----
  async submit() {
    if ((!this.view.input.value.trim() && !this.files.pending) || !this.threadId || this.submitting) return;
    if (this.run && BLOCKING.has(this.run.state)) {
      // The run as last seen may already have ended: its reply shown, its closing update still
      // on the way (a message sent right after a reply). Ask Heddle before refusing.
      this.submitting = true;
      try { await this.refreshRun(); } catch { /* refused below on what is known */ } finally { this.submitting = false; }
      if (this.run && BLOCKING.has(this.run.state)) {
        this.fail(new ChatError("api", "", { code: this.run.state === "awaiting_outcome" ? "outcome_first" : "run_active" }));
        return;
      }
    }
    this.submitting = true;
    let attachments;
    try { attachments = await this.files.take(); } finally { this.submitting = false; }
    const content = this.view.input.value;
    if (!content.trim() && !attachments.length) return;
    this.clearAlert();
    if (this.run && this.run.pending && this.run.pending.type === "approval") this.cards.declineByMessage();
    if (this.emptyNote) { this.emptyNote.remove(); this.emptyNote = null; }
    const entry = { content, attachments, el: this.view.message("user", content, { pending: true }) };
    this.files.show(entry.el, attachments);
    this.unsent.push(entry);
    this.view.input.value = "";
    this.view.autosize();
    this.view.scrollToEnd();
    this.post(entry, newKey());
  }

  async post(entry, key) {
    try {
      // The same Idempotency-Key on every retry: a retried message is never posted twice.
      const data = await this.api.post(path`/v1/loom/threads/${this.threadId}/messages`, entry.attachments.length ? { content: entry.content, attachments: entry.attachments.map((a) => a.id) } : { content: entry.content },
        { idempotencyKey: key, networkRetries: 2 });
      entry.id = data.message_id;
      this.addMessage({ id: data.message_id, role: "user", content: entry.content, run_id: data.run_id, thread_id: this.threadId,
        attachments: entry.attachments });
      this.handleRun(data.run);
    } catch (err) {
      if (this.destroyed) return;
      if (err.code === "run_active" && !entry.retried) {
        // Heddle's run ended after our view of it was read: once it has, send again (the same key).
        entry.retried = true;
        try { await this.refreshRun(); } catch { /* shown below */ }
        if (!this.run || !BLOCKING.has(this.run.state)) return this.post(entry, key);
      }
      if (err.code === "run_active") {
        entry.el.remove();
        this.unsent.splice(this.unsent.indexOf(entry), 1);
        if (!this.view.input.value) this.view.input.value = entry.content;
        this.files.restore(entry.attachments);
        this.fail(err);
        this.catchUp();
        return;
      }
      entry.el.classList.add("hc-failed");
      this.fail(err, () => { entry.el.classList.remove("hc-failed"); this.post(entry, key); });
    }
  }

  async cancel() {
    if (!this.run || TERMINAL.has(this.run.state)) return;
    const hadFocus = this.view.hasFocus();
    try {
      this.handleRun(await this.api.post(path`/v1/loom/runs/${this.run.id}/cancel`, undefined, { networkRetries: 2 }));
    } catch (err) {
      if (err.code === "run_terminal") this.catchUp();
      else this.fail(err, () => this.cancel());
    }
    if (hadFocus) this.view.input.focus();
  }

  destroy() {
    this.destroyed = true;
    if (this.pollTimer) clearTimeout(this.pollTimer);
    if (this.realtime) this.realtime.close();
    this.view.destroy();
    this.listeners.clear();
  }
}
