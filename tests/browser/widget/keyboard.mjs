// Keyboard only, as a screen-reader user would: log in with Tab and Enter, reach the message
// box, Shift+Enter for a new line, Enter to send, an approval card that takes the focus and is
// answered with the keyboard, and the focus back in the message box afterwards. Also the
// names and live regions assistive technology reads.
import { main, shot, watch } from "../browser.mjs";
import { SITE, recordEvents, waitForReply, waitForReady } from "./site.mjs";

const active = (page) => page.evaluate(() => {
  let el = document.activeElement;
  while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
  return el ? { tag: el.tagName.toLowerCase(), cls: el.className, text: (el.textContent || "").trim(), id: el.id } : null;
});

async function tabTo(page, predicate, limit = 25) {
  for (let i = 0; i < limit; i++) {
    await page.keyboard.press("Tab");
    const el = await active(page);
    if (predicate(el)) return el;
  }
  throw new Error("Tab never reached the element");
}

await main(async (browser, report) => {
  const context = await browser.newContext({ viewport: { width: 1000, height: 820 } });
  await recordEvents(context);
  const page = await context.newPage();
  watch(page, report);
  await page.goto(`${SITE}/login`);
  await shot(page, "example-login");
  // The username field has autofocus (wait for it: a loaded machine applies it late); type, Tab,
  // type, Enter.
  await page.waitForFunction(() => document.activeElement && document.activeElement.id === "username");
  await page.keyboard.type(process.env.USER_NAME);
  await page.keyboard.press("Tab");
  await page.keyboard.type(process.env.USER_PASSWORD);
  await Promise.all([page.waitForURL(`${SITE}/`), page.keyboard.press("Enter")]);
  await waitForReady(page);
  report.empty_note = await page.textContent("#chat .hc-notice");
  await shot(page, "widget-keyboard-empty");

  report.a11y = await page.evaluate(() => {
    const root = document.querySelector("#chat").shadowRoot;
    const log = root.querySelector(".hc-log");
    const input = root.querySelector(".hc-input");
    return {
      log_role: log.getAttribute("role"), log_live: log.getAttribute("aria-live"),
      log_label: root.getElementById(log.getAttribute("aria-labelledby")).textContent,
      input_label: root.querySelector(`label[for="${input.id}"]`).textContent,
      input_help: input.getAttribute("aria-describedby").split(" ").map((id) => root.getElementById(id).textContent).join(" | "),
      status_role: root.querySelector(".hc-conn").getAttribute("role"),
      alert_role: root.querySelector(".hc-alert").getAttribute("role"),
      send: root.querySelector(".hc-send").textContent,
    };
  });

  await tabTo(page, (el) => el && el.cls.includes("hc-input"));
  // Shift+Enter is a new line, Enter sends.
  await page.keyboard.type("line one");
  await page.keyboard.press("Shift+Enter");
  await page.keyboard.type("line two");
  report.multiline_value = await page.evaluate(() => document.querySelector("#chat").shadowRoot.querySelector(".hc-input").value);
  let since = await page.evaluate(() => window.__events.length);
  await page.keyboard.press("Enter");
  await waitForReply(page, "scripted model", since);
  report.sent = await page.evaluate(() => window.__events.filter((e) => e.name === "message" && e.detail.role === "user").map((e) => e.detail.content));
  report.focus_after_send = await active(page);

  // An approval card: the focus moves to its heading; Tab reaches Approve; Enter approves.
  await page.keyboard.type('call: send_transfer {"amount": 500, "to": "Grace"}');
  since = await page.evaluate(() => window.__events.length);
  await page.keyboard.press("Enter");
  await page.waitForSelector("#chat .hc-card:not(.hc-card-done)", { timeout: 30000 });
  await page.waitForFunction(() => document.querySelector("#chat").shadowRoot.activeElement?.classList.contains("hc-card-title"));
  report.focus_on_card = await active(page);
  await shot(page, "widget-keyboard-card");
  report.next_after_card = await tabTo(page, (el) => el && el.tag === "button", 3);
  await page.keyboard.press("Enter");
  const reply = await waitForReply(page, "send_transfer", since);
  report.reply = reply.content;
  report.focus_after_card = await active(page);
  await shot(page, "widget-keyboard-done");
});
