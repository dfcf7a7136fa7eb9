// A streamed reply: deltas are shown before the final message, they add up to it, and a reload
// continues the same conversation with its history.
import { main, shot } from "../browser.mjs";
import { SITE, events, typeAndSend, ui, waitForReply, signedIn, waitForReady } from "./site.mjs";

await main(async (browser, report) => {
  const { page } = await signedIn(browser, report);
  report.thread_id = await page.evaluate(() => window.chat.threadId);
  // Screenshot mid-stream: the bubble is there before the whole message.
  // What the bubble shows while the reply streams (read at the 4th piece, in the page).
  await page.evaluate(() => {
    document.addEventListener("heddle-chat:delta", (e) => {
      if (e.detail.seq !== 3) return;
      const bubble = document.querySelector("#chat").shadowRoot.querySelector(".hc-streaming");
      window.__partial = bubble && { text: bubble.textContent, hidden: bubble.querySelector(".hc-text").getAttribute("aria-hidden") };
    });
  });
  const mark = await typeAndSend(page, "hello");
  const reply = await waitForReply(page, "scripted model", mark);
  const log = await events(page);
  const deltas = log.filter((e) => e.name === "delta" && e.detail.message_id === reply.id);
  const final = log.find((e) => e.name === "message" && e.detail.id === reply.id);
  report.delta_count = deltas.length;
  report.deltas_before_final = deltas.every((d) => d.at < final.at);
  report.joined = deltas.sort((a, b) => a.detail.seq - b.detail.seq).map((d) => d.detail.delta).join("");
  report.final = reply.content;
  report.bubble_text = await page.textContent(`#chat .hc-msg[data-id="${reply.id}"] .hc-text`);
  report.partial = await page.evaluate(() => window.__partial);
  report.still_streaming = await page.locator("#chat .hc-streaming").count();
  await shot(page, "widget-stream-done");

  // Reload: the same thread (remembered per agent), its history shown, nothing twice.
  await page.reload();
  await waitForReady(page);
  report.thread_after_reload = await page.evaluate(() => window.chat.threadId);
  report.history = await page.$$eval("#chat .hc-msg .hc-text", (els) => els.map((e) => e.textContent));
  await shot(page, "widget-stream-reloaded");

  // Themed from the page with CSS variables (set here through the CSSOM: the page's CSP allows
  // no inline <style>), which reach into the widget's shadow root.
  report.theme = await page.evaluate(() => {
    const host = document.querySelector("#chat");
    const vars = { "--heddle-chat-bg": "#101418", "--heddle-chat-fg": "#e8eaed", "--heddle-chat-accent": "#c2185b",
      "--heddle-chat-assistant-bg": "#242a31", "--heddle-chat-border": "#3a424c", "--heddle-chat-font-size": "17px" };
    for (const [k, v] of Object.entries(vars)) host.style.setProperty(k, v);
    const root = host.shadowRoot;
    const css = (sel, prop) => getComputedStyle(root.querySelector(sel))[prop];
    return { bg: css(".hc", "backgroundColor"), fg: css(".hc", "color"), send: css(".hc-send", "backgroundColor"),
      bubble: css(".hc-assistant", "backgroundColor"), size: css(".hc", "fontSize") };
  });
  await shot(page, "widget-theme-dark");
});
