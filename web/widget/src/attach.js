// Files with a message (issue 43): an attach button, drag and drop, a pasted image; each file is
// uploaded as soon as it is picked (POST /v1/loom/threads/{id}/attachments, multipart, with its
// progress), shown in a tray above the message box with a Remove button, and sent with the next
// message as its `attachments`. In the log, a message's files show as thumbnails (images, read
// with the widget's token and shown as data: URLs, which a strict page CSP's `img-src data:`
// allows) and chips (name, size) that download the file.
import { ChatError, newKey } from "./session.js";
import { h, icon } from "./view.js";

const IMAGE = /^image\/(png|jpeg|gif|webp)$/;
const enc = encodeURIComponent;

// A paperclip (view.js `icon`).
const CLIP = "M21 11.5l-8.6 8.6a5.5 5.5 0 0 1-7.8-7.8l8.6-8.6a3.7 3.7 0 0 1 5.2 5.2l-8.6 8.6a1.8 1.8 0 0 1-2.6-2.6l7.9-7.9";

export function formatSize(bytes) {
  if (!(bytes >= 0)) return "";
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(bytes < 10 * 1024 ? 1 : 0)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

const asDataUrl = (blob) => new Promise((resolve, reject) => {
  const reader = new FileReader();
  reader.onload = () => resolve(reader.result);
  reader.onerror = () => reject(reader.error);
  reader.readAsDataURL(blob);
});

/** A sentence for a refused upload: the error envelope's own message (it names the limit or type). */
function uploadError(err) {
  if (err.kind === "network") return "Could not upload: check your connection and try again.";
  return err.message || "This file could not be uploaded.";
}

export class Attachments {
  constructor(chat) {
    this.chat = chat;
    this.items = []; // {file, el, state: "uploading" | "done" | "failed", meta, xhr, done: Promise}
    this.thumbs = new Map(); // attachment id -> data: URL promise (a thumbnail read once)
    const view = chat.view;
    this.picker = h("input", { type: "file", multiple: true, hidden: true, tabindex: "-1", "aria-hidden": "true" });
    this.button = h("button", {
      type: "button", class: "hc-btn hc-attach", part: "attach", "aria-label": "Attach files",
      title: "Attach files (or drop them here, or paste an image)",
    }, icon(CLIP));
    this.tray = h("ul", { class: "hc-tray", part: "attachments", "aria-label": "Files to send", hidden: true });
    this.status = h("span", { class: "hc-sr", role: "status" });
    const row = view.form.querySelector(".hc-row");
    row.prepend(this.button);
    view.form.insertBefore(this.tray, row);
    view.form.append(this.picker, this.status);
    this.button.addEventListener("click", () => this.picker.click());
    this.picker.addEventListener("change", () => { this.add([...this.picker.files]); this.picker.value = ""; });
    view.input.addEventListener("paste", (e) => {
      const files = [...(e.clipboardData ? e.clipboardData.files : [])];
      if (files.length) { e.preventDefault(); this.add(files); }
    });
    const box = view.container;
    box.addEventListener("dragover", (e) => {
      if (![...(e.dataTransfer ? e.dataTransfer.types : [])].includes("Files")) return;
      e.preventDefault();
      box.classList.add("hc-dropping");
    });
    box.addEventListener("dragleave", (e) => { if (!box.contains(e.relatedTarget)) box.classList.remove("hc-dropping"); });
    box.addEventListener("drop", (e) => {
      box.classList.remove("hc-dropping");
      const files = [...(e.dataTransfer ? e.dataTransfer.files : [])];
      if (files.length) { e.preventDefault(); this.add(files); }
    });
  }

  /** True while files are picked (uploaded, uploading or refused and not yet removed). */
  get pending() {
    return this.items.some((i) => i.state !== "failed");
  }

  add(files) {
    for (const file of files) {
      const item = { file, state: "uploading" };
      const bar = h("progress", { class: "hc-progress", max: "100", value: "0", "aria-label": `Uploading ${file.name}` });
      const error = h("span", { class: "hc-tray-error", role: "alert", hidden: true });
      const remove = h("button", { type: "button", class: "hc-btn hc-btn-small hc-btn-ghost hc-remove",
        "aria-label": `Remove ${file.name}`, text: "×" });
      const thumb = IMAGE.test(file.type) ? h("img", { class: "hc-thumb", alt: "" }) : null;
      if (thumb) asDataUrl(file).then((url) => { thumb.src = url; }, () => thumb.remove());
      item.el = h("li", { class: "hc-tray-item", "data-name": file.name },
        thumb, h("span", { class: "hc-chip-name", text: file.name }), h("span", { class: "hc-chip-size", text: formatSize(file.size) }),
        bar, error, remove);
      item.bar = bar;
      item.error = error;
      remove.addEventListener("click", () => this.remove(item));
      this.items.push(item);
      this.tray.append(item.el);
      this.tray.hidden = false;
      item.done = this.upload(item).then((meta) => {
        item.meta = meta;
        item.state = "done";
        bar.remove();
        item.el.dataset.id = meta.id;
        this.status.textContent = `${file.name} is ready to send.`;
      }, (err) => {
        if (item.state === "removed") return;
        item.state = "failed";
        bar.remove();
        error.textContent = uploadError(err);
        error.hidden = false;
        item.el.classList.add("hc-tray-failed");
        this.chat.emit("error", { kind: err.kind, code: err.code, status: err.status, message: error.textContent });
      });
    }
  }

  /** Files taken for a message Heddle refused (run_active): back in the tray, still uploaded. */
  restore(metas) {
    for (const meta of metas || []) {
      const remove = h("button", { type: "button", class: "hc-btn hc-btn-small hc-btn-ghost hc-remove",
        "aria-label": `Remove ${meta.name}`, text: "×" });
      const item = { file: { name: meta.name }, meta, state: "done", done: Promise.resolve(),
        el: h("li", { class: "hc-tray-item", "data-name": meta.name, "data-id": meta.id },
          h("span", { class: "hc-chip-name", text: meta.name }), h("span", { class: "hc-chip-size", text: formatSize(meta.size) }), remove) };
      remove.addEventListener("click", () => this.remove(item));
      this.items.push(item);
      this.tray.append(item.el);
    }
    this.tray.hidden = this.items.length === 0;
  }

  remove(item) {
    const hadFocus = this.chat.view.hasFocus();
    if (item.xhr && item.state === "uploading") item.xhr.abort();
    item.state = "removed";
    item.el.remove();
    this.items.splice(this.items.indexOf(item), 1);
    this.tray.hidden = this.items.length === 0;
    this.status.textContent = `${item.file.name} removed.`;
    if (hadFocus) this.chat.view.input.focus();
  }

  /** Upload one file with XMLHttpRequest (fetch has no upload progress); a 401 gets one fresh token. */
  async upload(item, refreshed = false) {
    const { api, threadId } = this.chat;
    const token = await api.tokens.get();
    const key = item.key || (item.key = newKey());
    const answer = await new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      item.xhr = xhr;
      xhr.open("POST", `${api.baseUrl}/v1/loom/threads/${enc(threadId)}/attachments`);
      xhr.setRequestHeader("Authorization", `Bearer ${token}`);
      xhr.setRequestHeader("Idempotency-Key", key);
      xhr.setRequestHeader("Accept", "application/json");
      xhr.upload.onprogress = (e) => { if (e.lengthComputable) item.bar.value = Math.round((100 * e.loaded) / e.total); };
      xhr.onload = () => {
        let payload = null;
        try { payload = JSON.parse(xhr.responseText); } catch { payload = null; }
        resolve({ status: xhr.status, payload });
      };
      xhr.onerror = () => reject(new ChatError("network", "upload failed"));
      xhr.onabort = () => reject(new ChatError("network", "upload cancelled"));
      const form = new FormData();
      form.append("file", item.file, item.file.name);
      xhr.send(form);
    });
    if (answer.status === 401 && !refreshed) {
      api.tokens.invalidate(token);
      return this.upload(item, true);
    }
    if (answer.status < 300 && answer.payload && answer.payload.status === "success") return answer.payload.data;
    const error = (answer.payload && answer.payload.error) || {};
    throw new ChatError("api", error.message || `HTTP ${answer.status}`, { code: error.code, status: answer.status });
  }

  /** The files to send with the message: waits for uploads still going; clears the tray. */
  async take() {
    await Promise.all(this.items.map((i) => i.done));
    const ready = this.items.filter((i) => i.state === "done");
    if (!ready.length) return [];
    for (const item of ready) item.el.remove();
    this.items = this.items.filter((i) => i.state !== "done");
    this.tray.hidden = this.items.length === 0;
    return ready.map((i) => {
      if (IMAGE.test(i.meta.content_type) && i.file instanceof Blob) this.thumbs.set(i.meta.id, asDataUrl(i.file)); // no download to show it
      return i.meta;
    });
  }

  /** A message's files under its text: thumbnails for images, chips (name, size) for the rest. */
  show(messageEl, attachments) {
    if (!attachments || !attachments.length || messageEl.querySelector(".hc-files")) return;
    const list = h("ul", { class: "hc-files", "aria-label": "Attached files" });
    for (const a of attachments) {
      const label = `${a.name}, ${formatSize(a.size)}`;
      const open = h("button", { type: "button", class: "hc-file", title: `Download ${label}`, "aria-label": `Download ${label}`, "data-id": a.id });
      if (IMAGE.test(a.content_type)) {
        const img = h("img", { class: "hc-thumb", alt: a.name, width: a.width, height: a.height });
        open.append(img);
        this.thumbnail(a.id).then((url) => { img.src = url; }, () => img.replaceWith(h("span", { class: "hc-chip-name", text: a.name })));
      } else {
        open.append(h("span", { class: "hc-chip-name", text: a.name }), h("span", { class: "hc-chip-size", text: formatSize(a.size) }));
      }
      open.addEventListener("click", () => this.download(a));
      list.append(h("li", {}, open));
    }
    messageEl.append(list);
  }

  thumbnail(id) {
    if (!this.thumbs.has(id)) this.thumbs.set(id, this.content(id).then(asDataUrl));
    return this.thumbs.get(id);
  }

  async content(id, refreshed = false) {
    const token = await this.chat.api.tokens.get();
    const response = await fetch(`${this.chat.api.baseUrl}/v1/loom/attachments/${enc(id)}/content`, {
      headers: { Authorization: `Bearer ${token}` }, mode: "cors", credentials: "omit", cache: "no-store",
    });
    if (response.status === 401 && !refreshed) {
      this.chat.api.tokens.invalidate(token);
      return this.content(id, true);
    }
    if (!response.ok) throw new ChatError("api", `HTTP ${response.status}`, { status: response.status });
    return response.blob();
  }

  async download(a) {
    try {
      const url = URL.createObjectURL(await this.content(a.id));
      const link = h("a", { href: url, download: a.name, hidden: true });
      this.chat.view.root.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (err) {
      this.chat.fail(err);
    }
  }
}
