// The widget's DOM, inside an open shadow root so the host page's CSS cannot break it (and it
// cannot break the page); CSS custom properties (--heddle-chat-*) still inherit through it, which
// is how a page themes it. No innerHTML anywhere: every text goes in as text, and a reply's
// Markdown as the sanitized nodes markdown.js builds.
import css from "./styles.css";
import { label, renderStreaming, renderText } from "./text.js";

let counter = 0;
const uid = (prefix) => `${prefix}-${++counter}`;

// An icon drawn as SVG strokes in the text's colour (an emoji needs a font the device may lack,
// and shows as an empty box without one), hidden from screen readers: its button has the name.
export function icon(paths, { size = 18, rotate = 0 } = {}) {
  const NS = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(NS, "svg");
  for (const [k, v] of Object.entries({ viewBox: "0 0 24 24", width: String(size), height: String(size), fill: "none",
    stroke: "currentColor", "stroke-width": "2", "stroke-linecap": "round", "stroke-linejoin": "round",
    "aria-hidden": "true", focusable: "false" })) svg.setAttribute(k, v);
  const g = document.createElementNS(NS, "g");
  if (rotate) g.setAttribute("transform", `rotate(${rotate} 12 12)`);
  for (const d of [paths].flat()) {
    const path = document.createElementNS(NS, "path");
    path.setAttribute("d", d);
    g.append(path);
  }
  svg.append(g);
  return svg;
}

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v == null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const child of children.flat(Infinity)) if (child != null) el.append(child);
  return el;
}

function adoptStyles(root) {
  // A constructed stylesheet is not an inline <style>, so a host page's strict CSP allows it.
  try {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(css);
    root.adoptedStyleSheets = [sheet];
  } catch {
    root.append(h("style", { text: css }));
  }
}

export class View {
  constructor(host, { title, placeholder }) {
    this.host = host;
    this.root = host.shadowRoot || host.attachShadow({ mode: "open" });
    this.root.replaceChildren();
    adoptStyles(this.root);
    this.placeholder = placeholder;
    const titleId = uid("hc-title");
    const hintId = uid("hc-hint");
    const keysId = uid("hc-keys");
    const inputId = uid("hc-input");
    this.title = h("h2", { class: "hc-title", id: titleId, part: "title", text: title });
    this.conn = h("span", { class: "hc-conn", role: "status", "data-state": "connecting", part: "status", text: "Connecting…" });
    this.log = h("div", {
      class: "hc-log", role: "log", "aria-live": "polite", "aria-relevant": "additions",
      "aria-labelledby": titleId, tabindex: "0", part: "log", "aria-busy": "true",
    });
    this.typing = h("div", { class: "hc-typing", hidden: true, "aria-hidden": "true" },
      h("span", { class: "hc-dots" }, h("i"), h("i"), h("i")), h("span", { text: "Assistant is replying…" }));
    this.alertText = h("span", { class: "hc-alert-text" });
    this.retryButton = h("button", { type: "button", class: "hc-btn hc-btn-small", hidden: true, text: "Try again" });
    this.dismissButton = h("button", { type: "button", class: "hc-btn hc-btn-small hc-btn-ghost", "aria-label": "Dismiss this message", text: "×" });
    this.alert = h("div", { class: "hc-alert", role: "alert", hidden: true, part: "alert" },
      this.alertText, h("span", { class: "hc-alert-actions" }, this.retryButton, this.dismissButton));
    this.hint = h("p", { class: "hc-hint", id: hintId, hidden: true });
    this.input = h("textarea", {
      id: inputId, class: "hc-input", rows: "1", placeholder, "aria-describedby": `${hintId} ${keysId}`,
      part: "input", maxlength: "8000", autocomplete: "off",
    });
    this.sendButton = h("button", { type: "submit", class: "hc-btn hc-btn-primary hc-send", part: "send", text: "Send" });
    this.stopButton = h("button", { type: "button", class: "hc-btn hc-stop", hidden: true, part: "stop", text: "Stop" });
    this.form = h("form", { class: "hc-composer", part: "composer", "aria-label": "Send a message" },
      this.hint,
      h("div", { class: "hc-row" },
        h("label", { for: inputId, class: "hc-sr", text: "Message" }),
        this.input,
        this.sendButton,
        this.stopButton),
      h("span", { id: keysId, class: "hc-sr", text: "Enter sends; Shift+Enter starts a new line." }));
    this.header = h("header", { class: "hc-header", part: "header" }, this.title, this.conn);
    this.container = h("section", { class: "hc", part: "container", "aria-labelledby": titleId },
      this.header,
      this.log, this.typing, this.alert, this.form);
    this.root.append(this.container);
    this.dismissButton.addEventListener("click", () => this.clearError());
    this.input.addEventListener("input", () => this.autosize());
    // The box's width changes with the page (a phone turned, a sidebar opened): refit it.
    if (typeof ResizeObserver === "function") {
      let width = 0;
      this.resizer = new ResizeObserver(([entry]) => {
        if (Math.round(entry.contentRect.width) !== width) { width = Math.round(entry.contentRect.width); this.autosize(); }
      });
      this.resizer.observe(this.input);
    }
  }

  destroy() {
    if (this.resizer) this.resizer.disconnect();
    this.root.replaceChildren();
  }

  /** True when keyboard focus is inside the widget: only then may the widget move it. */
  hasFocus() {
    return this.root.activeElement != null;
  }

  autosize() {
    // An empty box is as tall as its placeholder needs: on a narrow screen it wraps, never cut.
    const { input } = this;
    const empty = !input.value;
    if (empty) input.value = input.placeholder;
    input.style.height = "auto";
    input.style.height = `${Math.min(input.scrollHeight + 2, 160)}px`;
    if (empty) input.value = "";
  }

  /** Bring a card into view: in the log, and on the page, with the composer under it (on a
   * phone the widget often starts below the fold). Called only while the person is in the widget. */
  reveal(el) {
    el.scrollIntoView({ block: "nearest" });
    const box = this.container.getBoundingClientRect();
    if (box.height <= window.innerHeight && (box.bottom > window.innerHeight || box.top < 0)) {
      this.container.scrollIntoView({ block: "end" });
    }
  }

  scrollToEnd() {
    this.log.scrollTop = this.log.scrollHeight;
  }

  setConnection(state, text) {
    this.conn.dataset.state = state;
    this.conn.textContent = text;
  }

  setHistoryLoading(loading) {
    // While history fills the log, screen readers are not made to read all of it out.
    this.log.setAttribute("aria-busy", loading ? "true" : "false");
  }

  /** A message bubble; `streaming` bubbles show the text as it arrives, hidden from screen
   * readers until the whole message replaces it (one announcement, not one per word). */
  message(role, text, { id, pending, streaming, run, data } = {}) {
    const who = role === "user" ? "You" : "Assistant";
    const body = h("div", { class: "hc-text" });
    const el = h("div", { class: `hc-msg hc-${role === "user" ? "user" : "assistant"}`, "data-id": id, part: `message ${role}` },
      h("span", { class: "hc-sr", text: `${who}: ` }), body);
    if (streaming) {
      el.classList.add("hc-streaming");
      body.setAttribute("aria-hidden", "true");
    }
    // The person's own text as typed; a reply as Markdown (a streaming one without its JSON fields).
    if (role === "user") body.textContent = text;
    else if (streaming) renderStreaming(body, text);
    else if (data && typeof data === "object") renderData(body, data);
    else renderText(body, text);
    if (pending) el.classList.add("hc-pending");
    el.dataset.run = run || "";
    this.append(el);
    return el;
  }

  /** The final text of a streamed bubble: a new node, so the log announces it once. */
  finish(el, text, data) {
    el.classList.remove("hc-streaming");
    const atEnd = this.nearEnd(); // the rendered reply may be taller (a result's fields): keep its end in view
    const old = el.querySelector(".hc-text");
    const body = h("div", { class: "hc-text" });
    if (data && typeof data === "object") renderData(body, data);
    else renderText(body, text);
    old.replaceWith(body);
    if (atEnd) this.scrollToEnd();
  }

  notice(text, kind = "info") {
    const el = h("div", { class: `hc-notice hc-notice-${kind}`, text });
    this.append(el);
    return el;
  }

  append(el) {
    const atEnd = this.nearEnd();
    this.log.append(el);
    if (atEnd || this.log.getAttribute("aria-busy") === "true") this.scrollToEnd();
  }

  /** A card asking the person to decide (approve a tool call, confirm an outcome). */
  card({ heading, text, fields, note, actions, after }) {
    const headingId = uid("hc-card");
    const title = h("h3", { id: headingId, class: "hc-card-title", tabindex: "-1", text: heading });
    const list = fields && fields.length
      ? h("dl", { class: "hc-fields" }, fields.map(([k, v]) => [h("dt", { text: k }), h("dd", { text: v })]))
      : null;
    const buttons = actions.map((a) => h("button", {
      type: "button", class: `hc-btn ${a.primary ? "hc-btn-primary" : ""}`, text: a.label,
      "aria-describedby": headingId,
    }));
    const row = h("div", { class: "hc-actions" }, buttons);
    const el = h("div", { class: "hc-card", role: "group", "aria-labelledby": headingId, part: "card" },
      title, text ? h("p", { class: "hc-card-text", text }) : null, list,
      note ? h("p", { class: "hc-card-note", text: note }) : null, row);
    actions.forEach((a, i) => buttons[i].addEventListener("click", () => a.onClick(buttons[i])));
    if (after) after.after(el); // a card rebuilt from history goes back where it was
    else this.append(el);
    return {
      el, title, buttons,
      busy(on) {
        for (const b of buttons) b.disabled = on;
        el.setAttribute("aria-busy", on ? "true" : "false");
      },
      done(result) {
        const shown = el.querySelector(".hc-card-result");
        if (shown) shown.textContent = result;
        else row.replaceWith(h("p", { class: "hc-card-result", text: result }));
        el.classList.add("hc-card-done");
      },
    };
  }

  showError(text, retry) {
    this.alertText.textContent = text;
    this.retryButton.hidden = !retry;
    this.retryButton.onclick = retry ? () => { this.clearError(); retry(); } : null;
    const atEnd = this.nearEnd();
    this.alert.hidden = false;
    if (atEnd) this.scrollToEnd(); // the log just got shorter: keep its last message in view
  }

  nearEnd() {
    return this.log.scrollHeight - this.log.scrollTop - this.log.clientHeight < 40;
  }

  clearError() {
    this.alert.hidden = true;
    this.alertText.textContent = "";
  }

  setHint(text) {
    const atEnd = this.nearEnd();
    this.hint.textContent = text || "";
    this.hint.hidden = !text;
    if (atEnd) this.scrollToEnd();
  }

  setBusy({ typing, stoppable, blocked }) {
    const atEnd = this.nearEnd();
    this.typing.hidden = !typing;
    this.stopButton.hidden = !stoppable;
    // aria-disabled, not disabled: the button stays focusable and says why nothing happens.
    this.sendButton.setAttribute("aria-disabled", blocked ? "true" : "false");
    if (atEnd) this.scrollToEnd();
  }
}

// A structured reply (the agent's output schema) as a card of labelled fields, not raw JSON:
// nested objects become nested lists, arrays one line per item.
function renderData(body, data, depth = 0) {
  const value = (v) => {
    if (v === null || v === undefined) return h("span", { class: "hc-muted", text: "—" });
    if (Array.isArray(v)) return h("ul", { class: "hc-data-list" }, v.map((item) => h("li", {}, value(item))));
    if (typeof v === "object") return depth < 4 ? renderData(h("div", {}), v, depth + 1) : h("span", { text: JSON.stringify(v) });
    if (typeof v === "boolean") return h("span", { text: v ? "Yes" : "No" });
    return h("span", { text: String(v) });
  };
  const list = h("dl", { class: "hc-fields hc-data", part: "data" },
    Object.entries(data).map(([k, v]) => [h("dt", { text: label(k) }), h("dd", {}, value(v))]));
  body.append(list);
  return body;
}
