// A retried model call's text is retracted: the test's trigger server publishes, on the
// thread's realtime channel through the server's own publisher, the pieces of an attempt, then
// `message.delta` with `reset: true` for it, then the retry's pieces under a new message id.
import { main, shot } from "../browser.mjs";
import { signedIn } from "./site.mjs";

const bubble = (id) => `#chat .hc-msg[data-id="${id}"] .hc-text`;

// Wait until the bubble of message `id` shows exactly `text` (its element is in the shadow root).
async function waitForBubble(page, id, text) {
  await page.waitForFunction(([mid, want]) => {
    const el = document.querySelector("#chat").shadowRoot.querySelector(`.hc-msg[data-id="${mid}"] .hc-text`);
    return el && el.textContent === want;
  }, [id, text], { timeout: 30000 });
}

async function trigger(phase, threadId) {
  const response = await fetch(process.env.TRIGGER_URL, { method: "POST", body: JSON.stringify({ phase, thread_id: threadId }) });
  if (!response.ok) throw new Error(`trigger ${phase}: ${response.status}`);
  return response.json();
}

await main(async (browser, report) => {
  const { page } = await signedIn(browser, report);
  await page.waitForFunction(() => document.querySelector("#chat").shadowRoot.querySelector(".hc-conn").dataset.state === "live", null, { timeout: 60000 });
  const threadId = await page.evaluate(() => window.chat.threadId);

  const { void_id: voidId } = await trigger("void", threadId);
  await waitForBubble(page, voidId, "The void attempt says");
  report.partial = await page.textContent(bubble(voidId));
  await shot(page, "widget-reset-partial");

  await trigger("reset", threadId);
  await page.waitForFunction(() => window.__events.some((e) => e.name === "delta" && e.detail.reset), null, { timeout: 30000 });
  report.void_bubbles_after_reset = await page.locator(bubble(voidId)).count();
  report.streaming_after_reset = await page.locator("#chat .hc-streaming").count();

  const { kept_id: keptId } = await trigger("retry", threadId);
  await waitForBubble(page, keptId, "The retry says it all.");
  report.kept = await page.textContent(bubble(keptId));
  report.void_bubbles_at_end = await page.locator(bubble(voidId)).count();
  report.streaming_at_end = await page.locator("#chat .hc-streaming").count();
  await shot(page, "widget-reset-retried");
});
