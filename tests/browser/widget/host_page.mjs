// The widget inside its host page (the example site), as a new user meets it:
// - a long conversation (40 messages) adds no blank scroll to the page, at 390 and 1280 px,
//   before and after a reload (the screen-reader spans stay inside the widget);
// - a reply's Markdown renders (bold, code, a code block with Copy), and a `<script>` in it
//   stays text (it never runs);
// - at 390x844 the page is one screen and the message box is on it.
// Screenshots: widget-host-1280.png, widget-host-390.png (the viewport, as a person sees it).
import { main } from "../browser.mjs";
import { login, recordEvents, ui, waitForReply, waitForReady } from "./site.mjs";
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

  // A tool's failure quoted in a reply reads in plain words: its message is the operator's.
  since = await send(page, "ask: What went wrong?");
  await page.waitForFunction(() => window.chat.run && window.chat.run.state === "awaiting_input", null, { timeout: 30000 });
  since = await send(page, 'Nothing {"error": {"code": "destination_refused", "message": "outbound calls must use https"}}');
  const failed = await waitForReply(page, "destination_refused", since);
  report.tool_error_text = await page.$eval(`#chat .hc-assistant[data-id="${failed.id}"]`, (el) => el.innerText);
  await page.waitForFunction(() => window.chat.run && window.chat.run.terminal, null, { timeout: 30000 });

  // A message sent the moment a reply shows (before the run's closing update may have come):
  // it is sent, and no "still working" alert is left behind (issue 41: 2 of 3 tries).
  report.quick = [];
  for (let i = 0; i < 3; i++) {
    const mark = await page.evaluate(() => window.__events.length);
    await page.evaluate(([n, from]) => new Promise((resolve) => {
      const seen = () => window.__events.some((e) => e.at >= from && e.name === "message" && e.detail.role === "assistant");
      const tick = () => (seen() ? resolve(window.chat.send(`right after ${n}`)) : setTimeout(tick, 1));
      window.chat.send(`quick ${n}`);
      tick();
    }), [i, mark]);
    await page.waitForFunction(([n]) => window.__events.some((e) => e.name === "message" && e.detail.role === "user"
      && e.detail.content === `right after ${n}`), [i], { timeout: 30000 });
    await page.waitForFunction(() => window.chat.run && window.chat.run.terminal, null, { timeout: 30000 });
    await page.waitForTimeout(200);
    report.quick.push(await page.$eval("#chat", (host) => {
      const alert = host.shadowRoot.querySelector(".hc-alert");
      return { alert: alert.hidden ? null : alert.innerText, stop_hidden: host.shadowRoot.querySelector(".hc-stop").hidden };
    }));
  }

  report.scroll = {};
  for (const [width, height] of [[1280, 900], [390, 844]]) {
    await page.setViewportSize({ width, height });
    await page.evaluate(() => { window.__events = []; });
    await page.reload();
    await waitForReady(page);
    await page.waitForTimeout(300);
    report.scroll[width] = await measure(page);
    if (width === 390) {
      report.composer = await page.$eval("#chat", (host) => {
        const root = host.shadowRoot;
        const r = root.querySelector(".hc-composer").getBoundingClientRect();
        // The buttons on the message box's line: each one's vertical middle inside the box's height.
        const box = root.querySelector(".hc-input").getBoundingClientRect();
        const beside = [".hc-attach", ".hc-send"].map((sel) => {
          const b = root.querySelector(sel)?.getBoundingClientRect();
          return b ? b.top + b.height / 2 >= box.top && b.top + b.height / 2 <= box.bottom : null;
        });
        return { top: Math.round(r.top), bottom: Math.round(r.bottom), vh: window.innerHeight,
                 height: Math.round(r.height), input_width: Math.round(box.width), beside };
      });
      report.header_height = await page.$eval(".top", (el) => Math.round(el.getBoundingClientRect().height));
    }
    await page.screenshot({ path: `${SHOTS}/widget-host-${width}.png` });
  }
  report.messages_after_reload = await page.$$eval(ui.assistant, (els) => els.length);
  report.pwned_after_reload = await page.evaluate(() => window.__pwned === 1);
});
