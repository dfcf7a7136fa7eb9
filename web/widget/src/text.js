// An assistant's text as a person reads it: Markdown (markdown.js). A reply may also carry a
// tool's result as JSON (a model that quotes what its tool returned, or the built-in `scripted`
// model's summaries): that part is shown as labelled fields ("Reference: tr_123"), the words
// around it as Markdown. Text that is not valid JSON is left alone, so nothing is ever hidden or
// changed in meaning; a reply with a code block is all Markdown (its JSON is code to copy).
import { markdown } from "./markdown.js";
import { h } from "./view.js";

const MAX_DEPTH = 2;

// Field names an end user should not read as they are (an operator's or a developer's term).
const WORDS = { patch_ref: "Reference", ref: "Reference", id: "ID", url: "Link" };

export const label = (key) => {
  if (WORDS[key]) return WORDS[key];
  const words = String(key).replace(/[_-]+/g, " ").trim();
  return words ? words[0].toUpperCase() + words.slice(1) : String(key);
};

function value(v, depth) {
  if (v === null || v === undefined) return "—";
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (typeof v !== "object") return String(v);
  if (Array.isArray(v)) return v.map((x) => value(x, depth + 1)).join(", ");
  if (depth >= MAX_DEPTH) return JSON.stringify(v);
  return Object.entries(v).map(([k, x]) => `${label(k)}: ${value(x, depth + 1)}`).join("; ");
}

/** The first JSON object or array in `text` that parses: [start, end, parsed] or null. */
function findJson(text) {
  for (let i = 0; i < text.length; i++) {
    if (text[i] !== "{" && text[i] !== "[") continue;
    const close = text[i] === "{" ? "}" : "]";
    // The longest span first: a result's nested objects close inside it.
    for (let j = text.lastIndexOf(close); j > i; j = text.lastIndexOf(close, j - 1)) {
      try {
        const parsed = JSON.parse(text.slice(i, j + 1));
        if (parsed && typeof parsed === "object") return [i, j + 1, parsed];
      } catch { /* not JSON from here to there: try a shorter span */ }
    }
  }
  return null;
}

const prose = (text) => h("div", { class: "hc-md" }, markdown(text));

/** Fill `body` with `text`: Markdown, and a field list for a JSON part. */
export function renderText(body, text) {
  const found = text && !text.includes("```") ? findJson(text) : null;
  if (!found) {
    body.replaceChildren(prose(text));
    return;
  }
  const [start, end, parsed] = found;
  if (parsed && !Array.isArray(parsed) && parsed.error && typeof parsed.error === "object") {
    // A tool's failure as Heddle records it ({code, message}): the message is the operator's.
    parsed.error = "This could not be done right now.";
  }
  const entries = Array.isArray(parsed) ? parsed.map((v, i) => [String(i + 1), v]) : Object.entries(parsed);
  const before = text.slice(0, start).trimEnd(), after = text.slice(end).trimStart();
  const parts = [
    before && prose(before),
    entries.length > 0 && h("dl", { class: "hc-result" },
      entries.map(([k, v]) => [h("dt", { text: label(k) }), h("dd", { text: value(v, 1) })])),
    after && prose(after),
  ];
  body.replaceChildren(...parts.filter(Boolean));
}

/** A reply still being written: Markdown only (a JSON part is read once the reply is whole). */
export function renderStreaming(body, text) {
  body.replaceChildren(prose(text));
}
