// "What I remember": the facts a business's agents keep about the signed-in person
// (GET /v1/loom/memories, the session token's own subject), each with a Delete button
// (DELETE /v1/loom/memories/{id}). Shown when the page mounts with `memory: true`.
import { describe } from "./errors.js";
import { h } from "./view.js";

export class MemoryPanel {
  constructor(chat) {
    this.chat = chat;
    const { view } = chat;
    this.button = h("button", {
      type: "button", class: "hc-btn hc-btn-small hc-btn-ghost hc-memory-toggle", part: "memory-toggle",
      "aria-expanded": "false", text: "What I remember",
    });
    this.status = h("p", { class: "hc-memory-status", role: "status" });
    this.list = h("ul", { class: "hc-memory-list" });
    this.panel = h("section", { class: "hc-memory", part: "memory", hidden: true, "aria-label": "What I remember about you" },
      h("h3", { class: "hc-memory-title", text: "What I remember about you" }), this.status, this.list);
    this.button.setAttribute("aria-controls", (this.panel.id = `hc-memory-${Math.random().toString(36).slice(2, 8)}`));
    view.header.append(this.button);
    view.header.after(this.panel);
    this.button.addEventListener("click", () => this.toggle());
  }

  get open() {
    return !this.panel.hidden;
  }

  async toggle() {
    this.panel.hidden = this.open;
    this.button.setAttribute("aria-expanded", String(this.open));
    if (this.open) await this.load();
  }

  async load() {
    this.status.textContent = "Loading…";
    try {
      const page = await this.chat.api.get("/v1/loom/memories");
      this.render(page.items || []);
    } catch (err) {
      this.status.textContent = describe(err);
    }
  }

  render(items) {
    this.list.replaceChildren(...items.map((fact) => h("li", { class: "hc-memory-item", "data-id": fact.id },
      h("span", { class: "hc-memory-text", text: fact.content }),
      h("button", {
        type: "button", class: "hc-btn hc-btn-small hc-memory-delete", "aria-label": `Delete: ${fact.content}`,
        text: "Delete", onclick: (e) => this.remove(fact, e.currentTarget),
      }))));
    this.status.textContent = items.length ? "" : "Nothing is remembered about you.";
  }

  async remove(fact, button) {
    button.disabled = true;
    try {
      await this.chat.api.request("DELETE", `/v1/loom/memories/${encodeURIComponent(fact.id)}`);
    } catch (err) {
      // Already gone (deleted elsewhere): the list is simply out of date.
      if (!(err && err.code === "not_found")) {
        button.disabled = false;
        this.status.textContent = describe(err);
        return;
      }
    }
    const item = button.closest("li");
    if (item) item.remove();
    if (!this.list.children.length) this.status.textContent = "Nothing is remembered about you.";
    else this.status.textContent = "Deleted.";
    this.chat.emit("memory", { deleted: fact.id });
  }
}
