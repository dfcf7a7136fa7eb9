// An assistant's Markdown as a person reads it: marked (GitHub-flavoured, line breaks kept) with
// raw HTML turned into text (a `<script>` in a reply is shown as written), then DOMPurify over its
// output as a second wall, handed back as DOM nodes (no innerHTML on the page). Links open in a
// new tab without the page's referrer or opener, and only http(s) and mailto links are kept;
// images are shown as their description (a reply cannot make the browser fetch a URL). Code
// blocks get a Copy button. The console renders messages the same way (web/console/src/markdown.ts).
import DOMPurify from "dompurify";
import { Marked } from "marked";
import { h } from "./view.js";

const escapeHtml = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const marked = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    html: ({ text }) => escapeHtml(text),
    image: ({ text }) => escapeHtml(text),
  },
});

const purify = DOMPurify(window);
const SAFE_URL = /^(?:https?:|mailto:)/i;
purify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    if (!SAFE_URL.test(node.getAttribute("href") || "")) node.removeAttribute("href");
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
});
const CONFIG = {
  ALLOWED_TAGS: ["p", "br", "strong", "em", "del", "code", "pre", "a", "ul", "ol", "li", "blockquote",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "table", "thead", "tbody", "tr", "th", "td", "input"],
  ALLOWED_ATTR: ["href", "title", "start", "class", "type", "checked", "disabled", "align"],
  RETURN_DOM_FRAGMENT: true,
};

function copyButton(code) {
  const button = h("button", { type: "button", class: "hc-copy", "aria-label": "Copy code", text: "Copy" });
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(code.textContent);
      button.textContent = "Copied";
    } catch {
      // No clipboard (a page over plain http): select the code so Ctrl+C copies it.
      const range = document.createRange();
      range.selectNodeContents(code);
      const selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      button.textContent = "Selected: press Ctrl+C";
    }
    setTimeout(() => { button.textContent = "Copy"; }, 2000);
  });
  return button;
}

/** `text` (Markdown) as a DocumentFragment of safe nodes. */
export function markdown(text) {
  const fragment = purify.sanitize(marked.parse(String(text || ""), { async: false }).trim(), CONFIG);
  for (const input of fragment.querySelectorAll("input")) {
    if (input.type !== "checkbox") input.remove(); // only a task list's box
    else input.disabled = true;
  }
  for (const pre of fragment.querySelectorAll("pre")) {
    const code = pre.querySelector("code") || pre;
    const box = h("div", { class: "hc-code" });
    pre.replaceWith(box);
    box.append(copyButton(code), pre);
  }
  return fragment;
}
