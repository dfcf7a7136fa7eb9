// Files in the widget (issue 43): the attach button is a labelled, keyboard-reachable <button>;
// a refused file (HTML) shows the error envelope's message inline and is removable; a PNG is
// uploaded (progress, then ready), sent, shown as a thumbnail beside the scripted model's reply
// naming it; after a reload the thumbnail (read from the content route) and the reply are back.
import { main, shot } from "../browser.mjs";
import { signedIn, ui, waitForReply, waitForReady } from "./site.mjs";

const tray = "#chat .hc-tray";

await main(async (browser, report) => {
  const { page } = await signedIn(browser, report);

  report.button = await page.$eval("#chat .hc-attach", (b) => ({ tag: b.tagName, label: b.getAttribute("aria-label"), tabindex: b.tabIndex }));
  // Keyboard: Shift+Tab from the message box reaches the attach button.
  await page.focus(ui.input);
  await page.keyboard.press("Shift+Tab");
  report.focused = await page.$eval("#chat", (host) => host.shadowRoot.activeElement && host.shadowRoot.activeElement.getAttribute("aria-label"));

  // A refused file: inline error, removable.
  await page.setInputFiles("#chat input[type=file]", process.env.HTML_PATH);
  await page.waitForSelector(`${tray} .hc-tray-error:not([hidden])`, { timeout: 30000 });
  report.refused = await page.textContent(`${tray} .hc-tray-error`);
  await shot(page, "widget-attach-refused");
  await page.click(`${tray} .hc-remove`);
  report.tray_after_remove = await page.$$eval(`${tray} li`, (els) => els.length);

  // A PNG: uploaded, then sent with a question.
  await page.setInputFiles("#chat input[type=file]", process.env.PNG_PATH);
  await page.waitForSelector(`${tray} li[data-id]`, { timeout: 30000 });
  report.tray_item = await page.$eval(`${tray} li`, (el) => ({ name: el.dataset.name, thumb: !!el.querySelector("img"), text: el.innerText }));
  const since = await page.evaluate(() => window.__events.length);
  await page.fill(ui.input, "What is in this picture?");
  await page.press(ui.input, "Enter");
  const reply = await waitForReply(page, "attachment", since);
  report.reply = reply.content;
  const thumbs = () => page.$$eval("#chat .hc-user .hc-files img", (els) => els.map((img) => ({
    alt: img.alt, data: img.src.startsWith("data:image/png"), loaded: img.complete && img.naturalWidth })));
  await page.waitForFunction(() => {
    const img = document.querySelector("#chat").shadowRoot.querySelector(".hc-user .hc-files img");
    return img && img.complete && img.naturalWidth > 0;
  }, null, { timeout: 30000 });
  report.thumbs_before = await thumbs();
  report.message_event = await page.evaluate(() => window.__events.filter((e) => e.name === "message" && e.detail.role === "user").map((e) => e.detail.attachments));
  await page.waitForFunction(() => window.chat.run && window.chat.run.terminal, null, { timeout: 30000 });
  await shot(page, "widget-attach-sent");

  // Reload: the thumbnail comes back from GET /attachments/{id}/content, and the reply.
  await page.evaluate(() => { window.__events = []; });
  await page.reload();
  await waitForReady(page);
  await page.waitForFunction(() => {
    const img = document.querySelector("#chat").shadowRoot.querySelector(".hc-user .hc-files img");
    return img && img.complete && img.naturalWidth > 0;
  }, null, { timeout: 30000 });
  report.thumbs_after = await thumbs();
  report.replies_after = await page.$$eval(ui.assistant, (els) => els.map((e) => e.innerText));
  await shot(page, "widget-attach-after-reload");
});
