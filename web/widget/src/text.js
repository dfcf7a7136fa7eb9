// An assistant's text as a person reads it. A reply may carry a tool's result as JSON (a model
// that quotes what its tool returned, or the built-in `scripted` model's summaries): that part is
// shown as labelled fields ("Patch ref: tr_123"), the words around it stay as they are. Text that
// is not valid JSON is left alone, so nothing is ever hidden or changed in meaning.
import { h } from "./view.js";

const MAX_DEPTH = 2;

export const label = (key) => {
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

/** Fill `body` with `text`: plain text nodes, and a field list for a JSON part. */
export function renderText(body, text) {
  const found = text ? findJson(text) : null;
  if (!found) {
    body.textContent = text;
    return;
  }
  const [start, end, parsed] = found;
  const entries = Array.isArray(parsed) ? parsed.map((v, i) => [String(i + 1), v]) : Object.entries(parsed);
  const before = text.slice(0, start).trimEnd(), after = text.slice(end).trimStart();
  const parts = [
    before && h("span", { class: "hc-text-part", text: before }),
    entries.length > 0 && h("dl", { class: "hc-result" },
      entries.map(([k, v]) => [h("dt", { text: label(k) }), h("dd", { text: value(v, 1) })])),
    after && h("span", { class: "hc-text-part", text: after }),
  ];
  body.replaceChildren(...parts.filter(Boolean));
}
