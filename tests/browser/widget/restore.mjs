// On a 390 px phone: the placeholder is whole, a waiting approval card is in view, tool results
// read as fields (not JSON); after a reload the answered cards (approved, denied) are rebuilt
// from the thread's runs, each after the message that asked for it.
import { main, shot } from "../browser.mjs";
import { login, recordEvents, typeAndSend, ui, waitForReply, waitForReady } from "./site.mjs";
import { watch } from "../browser.mjs";

// Where a part of the widget is, in the page's viewport.
const box = (page, selector) => page.$eval(selector, (el) => {
  const r = el.getBoundingClientRect();
  return { top: Math.round(r.top), bottom: Math.round(r.bottom), vh: window.innerHeight };
});

async function viewportShot(page, name) {
  await page.screenshot({ path: `${process.env.HEDDLE_SCREENSHOTS || "screenshots"}/${name}.png` });
}

await main(async (browser, report) => {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  await recordEvents(context);
  const page = await context.newPage();
  watch(page, report);
  await login(page, process.env.USER_NAME, process.env.USER_PASSWORD);

  // The placeholder fits its box (it wraps instead of being cut).
  report.placeholder = await page.$eval(ui.input, (el) => {
    const shown = el.clientHeight;
    el.value = el.placeholder; const needed = el.scrollHeight; el.value = "";
    return { text: el.placeholder, shown, needed, width: el.clientWidth };
  });
  await viewportShot(page, "widget-390-empty");

  // A transfer above the limit waits for approval: the card is on screen, composer too.
  let mark = await typeAndSend(page, 'call: send_transfer {"amount": 250, "to": "Ada"}');
  await page.waitForSelector(ui.card, { timeout: 30000 });
  await page.waitForTimeout(300);
  report.card_box = await box(page, `${ui.card}`);
  report.composer_box = await box(page, "#chat .hc-composer");
  report.card_fields = await page.$$eval(`${ui.card} dt`, (els) => els.map((e) => e.textContent));
  report.card_values = await page.$$eval(`${ui.card} dd`, (els) => els.map((e) => e.textContent));
  await viewportShot(page, "widget-390-card");
  await page.click(`${ui.card} button:text-is("Approve")`);
  const approved = await waitForReply(page, "send_transfer", mark);
  // The reply's tool result as fields.
  report.approved_reply = await page.$eval(`#chat .hc-assistant[data-id="${approved.id}"]`, (el) => ({
    text: el.innerText, fields: [...el.querySelectorAll(".hc-result dt")].map((d) => d.textContent) }));
  await viewportShot(page, "widget-390-approved");

  mark = await typeAndSend(page, 'call: send_transfer {"amount": 300, "to": "Bob"}');
  await page.waitForSelector(ui.card, { timeout: 30000 });
  await page.click(`${ui.card} button:text-is("Deny")`);
  const denied = await waitForReply(page, "send_transfer", mark);
  report.denied_reply = await page.$eval(`#chat .hc-assistant[data-id="${denied.id}"]`, (el) => el.innerText);
  await page.waitForFunction(() => window.chat.run && window.chat.run.terminal);
  const cards = (p) => p.$$eval("#chat .hc-card", (els) => els.map((el) => ({
    heading: el.querySelector("h3").textContent, result: el.querySelector(".hc-card-result")?.textContent,
    after: el.previousElementSibling?.querySelector(".hc-text")?.textContent, restored: el.dataset.restored === "true" })));
  report.cards_before = await cards(page);

  // Reload: the same conversation, and its answered cards, in place.
  await page.evaluate(() => { window.__events = []; });
  await page.reload();
  await waitForReady(page);
  report.cards_after = await cards(page);
  report.replies_after = await page.$$eval("#chat .hc-assistant .hc-result", (els) => els.length);
  await shot(page, "widget-390-after-reload");

  // A server that has just restarted answers the first trace reads 503: the cards come back
  // once it answers (they used to stay missing until the next reload).
  let refused = 0;
  await page.route("**/v1/loom/runs/*/trace", (route) => {
    if (route.request().method() !== "GET" || refused >= 2) return route.continue(); // the CORS preflight too
    refused++;
    return route.fulfill({ status: 503, contentType: "application/json",
      headers: { "Access-Control-Allow-Origin": new URL(page.url()).origin },
      body: JSON.stringify({ status: "error", error: { code: "service_unavailable", message: "starting" } }) });
  });
  await page.evaluate(() => { window.__events = []; });
  await page.reload();
  await waitForReady(page);
  report.cards_while_refused = (await cards(page)).length;
  await page.waitForFunction(() => document.querySelector("#chat").shadowRoot.querySelectorAll(".hc-card").length >= 2,
    null, { timeout: 20000 });
  report.cards_after_restart = await cards(page);
  report.trace_refusals = refused;
  await page.unroute("**/v1/loom/runs/*/trace");
  await page.$eval("#chat .hc-card", (el) => el.scrollIntoView({ block: "center" }));
  await viewportShot(page, "widget-390-after-reload-cards");
});
