// Thumbs on each assistant reply: up or down (pressed again: withdrawn), and on a thumbs-down an
// optional comment. The choice comes back with the thread's messages (`feedback`), so it is kept
// after a reload. POST/DELETE /v1/loom/messages/{id}/feedback, as the thread's own subject.
import { h, icon } from "./view.js";

// A raised thumb: the cuff, then the hand (view.js `icon`; turned half round for thumbs-down).
const THUMB = ["M3 10h4v11H3z", "M7 10l4-8a2.5 2.5 0 0 1 3 2.5V9h5.5a2 2 0 0 1 2 2.3l-1.4 8a2 2 0 0 1-2 1.7H7"];

const path = (id) => `/v1/loom/messages/${encodeURIComponent(id)}/feedback`;

export function attachFeedback(api, el, message, onError) {
  if (message.role !== "assistant" || !message.id || el.querySelector(".hc-feedback")) return;
  let rating = message.feedback?.rating || null;
  const up = h("button", { type: "button", class: "hc-btn hc-btn-small hc-btn-ghost hc-rate", "data-rating": "up",
    "aria-label": "Good answer", title: "Good answer" }, icon(THUMB, { size: 16 }));
  const down = h("button", { type: "button", class: "hc-btn hc-btn-small hc-btn-ghost hc-rate", "data-rating": "down",
    "aria-label": "Bad answer", title: "Bad answer" }, icon(THUMB, { size: 16, rotate: 180 }));
  const comment = h("textarea", { class: "hc-feedback-comment", rows: "2", maxlength: "2000",
    "aria-label": "What was wrong with this answer? (optional)", placeholder: "What was wrong? (optional)" });
  const send = h("button", { type: "button", class: "hc-btn hc-btn-small hc-btn-primary hc-feedback-send", text: "Send" });
  const form = h("div", { class: "hc-feedback-form", hidden: true }, comment, send);
  const thanks = h("span", { class: "hc-feedback-thanks", role: "status" });
  const bar = h("div", { class: "hc-feedback", part: "feedback", role: "group", "aria-label": "Rate this answer" },
    up, down, thanks, form);
  const show = () => {
    up.setAttribute("aria-pressed", rating === "up" ? "true" : "false");
    down.setAttribute("aria-pressed", rating === "down" ? "true" : "false");
    bar.dataset.rating = rating || "";
  };
  const save = async (next, text) => {
    try {
      if (next === null) await api.request("DELETE", path(message.id));
      else await api.request("POST", path(message.id), { body: text ? { rating: next, comment: text } : { rating: next } });
      rating = next;
      thanks.textContent = next ? "Thanks for the feedback." : "";
      show();
    } catch (err) {
      onError(err);
    }
  };
  up.addEventListener("click", () => { form.hidden = true; save(rating === "up" ? null : "up"); });
  down.addEventListener("click", () => {
    if (rating === "down") { form.hidden = true; save(null); return; }
    save("down").then(() => { if (rating === "down") { form.hidden = false; comment.focus(); } });
  });
  send.addEventListener("click", () => {
    const text = comment.value.trim();
    form.hidden = true;
    if (text) save("down", text);
  });
  if (message.feedback?.comment) comment.value = message.feedback.comment;
  show();
  el.append(bar);
}
