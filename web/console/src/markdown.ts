// Messages as people read them: marked (GitHub-flavoured, line breaks kept) with raw HTML shown as
// text, then DOMPurify as a second wall; links open in a new tab without the console's referrer,
// and only http(s) and mailto links are kept; images are shown as their description (nothing is
// fetched). The chat widget renders replies the same way (web/widget/src/markdown.js).
import DOMPurify from "dompurify";
import { Marked } from "marked";

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const marked = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    html: ({ text }) => escapeHtml(text),
    image: ({ text }) => escapeHtml(text),
  },
});

const SAFE_URL = /^(?:https?:|mailto:)/i;
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    if (!SAFE_URL.test(node.getAttribute("href") || "")) node.removeAttribute("href");
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
});

const CONFIG = {
  ALLOWED_TAGS: ["p", "br", "strong", "em", "del", "code", "pre", "a", "ul", "ol", "li", "blockquote",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "table", "thead", "tbody", "tr", "th", "td"],
  ALLOWED_ATTR: ["href", "title", "start", "class", "align"],
};

/** Sanitized HTML of `text` (Markdown). */
export function markdownHtml(text: string): string {
  return DOMPurify.sanitize(marked.parse(text || "", { async: false }) as string, CONFIG) as string;
}
