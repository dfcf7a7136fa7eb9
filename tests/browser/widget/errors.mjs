// Errors a person can read: the site's mint endpoint is down (then back: "Try again" recovers),
// the network drops while sending (the message is kept and re-sent with the same key), and a
// run that fails.
import { main, shot } from "../browser.mjs";
import { SITE, typeAndSend, ui, waitForReply, signedIn, waitForReady } from "./site.mjs";

await main(async (browser, report) => {
  const { page } = await signedIn(browser, report);

  // 1. The mint endpoint is down when the page loads.
  await page.route("**/api/heddle/session-token", (route) => route.abort("connectionrefused"));
  await page.reload();
  await page.waitForSelector(`${ui.alert}:not([hidden])`, { timeout: 30000 });
  report.mint_down = await page.textContent(`${ui.alert} .hc-alert-text`);
  report.mint_down_status = await page.textContent(ui.conn);
  report.error_events = await page.evaluate(() => window.__events.filter((e) => e.name === "error").map((e) => e.detail));
  await shot(page, "widget-error-mint-down");
  // It comes back; "Try again" recovers without a reload.
  await page.unroute("**/api/heddle/session-token");
  await page.click(`${ui.alert} button:text-is("Try again")`);
  await waitForReady(page);
  report.alert_hidden_after_retry = await page.isHidden(ui.alert);

  // 2. The network to Heddle drops while sending: a readable error, the message stays, and
  //    "Try again" sends it once (same Idempotency-Key).
  await page.route("**/v1/loom/threads/*/messages", (route) =>
    route.request().method() === "POST" ? route.abort("internetdisconnected") : route.continue());
  await typeAndSend(page, "hello through a flaky network");
  await page.waitForSelector(`${ui.alert}:not([hidden])`, { timeout: 30000 });
  report.network_down = await page.textContent(`${ui.alert} .hc-alert-text`);
  report.failed_bubbles = await page.locator("#chat .hc-failed").count();
  await shot(page, "widget-error-network");
  await page.unroute("**/v1/loom/threads/*/messages");
  const since = await page.evaluate(() => window.__events.length);
  await page.click(`${ui.alert} button:text-is("Try again")`);
  await waitForReply(page, "scripted model", since);
  report.user_bubbles = await page.$$eval("#chat .hc-user .hc-text", (els) => els.map((e) => e.textContent));

  // 3. A run that fails says why, in words.
  const mark = await typeAndSend(page, "fail: the model provider is down");
  await page.waitForFunction(() => window.chat.run && window.chat.run.state === "failed", null, { timeout: 30000 });
  await page.waitForSelector(`${ui.alert}:not([hidden])`);
  report.run_failed = await page.textContent(`${ui.alert} .hc-alert-text`);
  report.run_error = await page.evaluate(() => window.chat.run.error);
  report.run_id = await page.evaluate(() => window.chat.run.id);
  await shot(page, "widget-error-run-failed");
});
