// Session tokens: the widget asks getToken() again shortly before its token expires (the page's
// clock is moved on by 110 s of the token's 120), and once more when Heddle answers 401; the
// person sees neither.
import { main, shot, watch } from "../browser.mjs";
import { login, recordEvents, typeAndSend, ui, waitForReply } from "./site.mjs";

await main(async (browser, report) => {
  const context = await browser.newContext({ viewport: { width: 1000, height: 820 } });
  await recordEvents(context);
  await context.clock.install();
  const page = await context.newPage();
  watch(page, report);
  let mints = 0;
  const unauthorized = [];
  const sequence = [];
  page.on("request", (r) => {
    if (r.url().endsWith("/api/heddle/session-token")) { mints++; sequence.push("mint"); }
    if (r.method() === "POST" && /\/messages$/.test(r.url())) sequence.push("post");
  });
  page.on("response", (r) => { if (r.status() === 401) unauthorized.push(r.url()); });
  await login(page, process.env.USER_NAME, process.env.USER_PASSWORD);
  let mark = await typeAndSend(page, "hello");
  await waitForReply(page, "scripted model", mark);
  report.mints_at_start = mints;

  // 110 s later (page time), the token has 10 s left: a new one before the next call.
  await page.clock.fastForward("01:50");
  mark = await typeAndSend(page, "ask: Still valid?");
  await waitForReply(page, "Still valid?", mark);
  report.mints_after_expiry = mints;
  report.unauthorized_before_401_test = unauthorized.length;

  // Heddle refuses the next message's token once (as after a key rotation): one new token,
  // the same message sent again, nothing shown.
  let refused = 0;
  await page.route("**/v1/loom/threads/*/messages", (route) => {
    if (route.request().method() !== "POST" || refused++) return route.continue();
    return route.fulfill({ status: 401, contentType: "application/json", headers: { "Access-Control-Allow-Origin": new URL(page.url()).origin },
      body: JSON.stringify({ status: "error", error: { code: "unauthorized", message: "The session token has expired." } }) });
  });
  const from = sequence.length;
  mark = await typeAndSend(page, "Yes");
  await waitForReply(page, "You said: Yes", mark);
  // (The page's clock now runs 110 s ahead of Heddle's, so later tokens all look near their
  // end to the widget and are fetched per call: only the order matters here.)
  report.sequence_for_401 = sequence.slice(from);
  report.refused = refused;
  report.alert_hidden = await page.isHidden(ui.alert);
  report.user_messages = await page.$$eval("#chat .hc-user .hc-text", (els) => els.map((e) => e.textContent));
  await shot(page, "widget-token-refresh");
});
