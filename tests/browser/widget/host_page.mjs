// The widget inside its host page (the example site), as a new user meets it:
// - a long conversation (40 messages) adds no blank scroll to the page, at 390 and 1280 px,
//   before and after a reload (the screen-reader spans stay inside the widget);
// - a reply's Markdown renders (bold, code, a code block with Copy), and a `<script>` in it
//   stays text (it never runs);
// - at 390x844 the page is one screen and the message box is on it.
// Screenshots: widget-host-1280.png, widget-host-390.png (the viewport, as a person sees it).
import { main } from "../browser.mjs";
import { login, recordEvents, ui, waitForReply } from "./site.mjs";
import { watch } from "../browser.mjs";

const SHOTS = process.env.HEDDLE_SCREENSHOTS || "screenshots";
const MARKDOWN = "**bold** and `code` <script>window.__pwned = 1</script> [docs](https://example.com/x)\n"
  + "```js\nconst answer = 42;\n```";

const measure = (page) => page.evaluate(() => ({
  scroll: document.documentElement.scrollHeight,
  body: Math.round(document.body.getBoundingClientRect().height),
  viewport: window.innerHeight,
}));

async function send(page, text) {
  const since = await page.evaluate(() => window.__events.length);
  await page.evaluate((t) => window.chat.send(t), text);
  return since;
}

await main(async (browser, report) => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await recordEvents(context);
  const page = await context.newPage();
  watch(page, report);
  await login(page, process.env.USER_NAME, process.env.USER_PASSWORD);

  // 40 messages: 20 of the person's, 20 replies (each waited for: one run at a time).
  for (let i = 0; i < 20; i++) {
    const since = await send(page, `message ${i + 1}: hello`);
    await waitForReply(page, "scripted model", since);
    await page.waitForFunction(() => window.chat.run && window.chat.run.terminal, null, { timeout: 30000 });
  }
  // A reply with Markdown: the scripted model repeats an answer to its question.
  let since = await send(page, "ask: Say something in Markdown");
  await page.waitForFunction(() => window.chat.run && window.chat.run.state === "awaiting_input", null, { timeout: 30000 });
  since = await send(page, MARKDOWN);
  const reply = await waitForReply(page, "You said:", since);
  await page.waitForFunction(() => window.chat.run && window.chat.run.terminal, null, { timeout: 30000 });
  report.message_count = await page.$$eval("#chat .hc-msg", (els) => els.length);
  report.markdown = await page.$eval(`#chat .hc-assistant[data-id="${reply.id}"]`, (el) => ({
    strong: el.querySelector(".hc-md strong")?.textContent,
    code: el.querySelector(".hc-md p code")?.textContent,
    block: el.querySelector(".hc-md pre code")?.textContent,
    copy: el.querySelector(".hc-code .hc-copy")?.textContent,
    link: el.querySelector(".hc-md a") && { href: el.querySelector(".hc-md a").href, target: el.querySelector(".hc-md a").target, rel: el.querySelector(".hc-md a").rel },
    scripts: el.querySelectorAll("script").length,
    text: el.innerText,
  }));
  report.pwned = await page.evaluate(() => window.__pwned === 1);

  report.scroll = {};
  for (const [width, height] of [[1280, 900], [390, 844]]) {
    await page.setViewportSize({ width, height });
    await page.evaluate(() => { window.__events = []; });
    await page.reload();
    await page.waitForFunction(() => window.__events && window.__events.some((e) => e.name === "ready"), null, { timeout: 30000 });
    await page.waitForTimeout(300);
    report.scroll[width] = await measure(page);
    if (width === 390) {
      report.composer = await page.$eval("#chat", (host) => {
        const r = host.shadowRoot.querySelector(".hc-composer").getBoundingClientRect();
        return { top: Math.round(r.top), bottom: Math.round(r.bottom), vh: window.innerHeight };
      });
      report.header_height = await page.$eval(".top", (el) => Math.round(el.getBoundingClientRect().height));
    }
    await page.screenshot({ path: `${SHOTS}/widget-host-${width}.png` });
  }
  report.messages_after_reload = await page.$$eval(ui.assistant, (els) => els.length);
  report.pwned_after_reload = await page.evaluate(() => window.__pwned === 1);
});
