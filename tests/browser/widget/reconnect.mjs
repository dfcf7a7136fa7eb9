// The realtime socket drops (and cannot come back for a while) in the middle of a conversation:
// the widget says so, keeps following the run without it, pusher-js reconnects, the widget
// catches up, and nothing is lost or shown twice. Then replies stream live again.
import { main, shot, watch } from "../browser.mjs";
import { events, login, recordEvents, typeAndSend, ui, waitForReply, waitForReady } from "./site.mjs";

await main(async (browser, report) => {
  const context = await browser.newContext({ viewport: { width: 1000, height: 820 } });
  await recordEvents(context);
  const page = await context.newPage();
  watch(page, report);
  // Every Pusher socket goes through this route, so the test can cut it and keep it cut.
  const sockets = [];
  let blocked = false;
  report.socket_attempts = 0;
  await page.routeWebSocket(/\/app\//, (ws) => {
    report.socket_attempts++;
    if (blocked) {
      ws.close({ code: 1006, reason: "network down" }).catch(() => ws.close());
      return;
    }
    ws.connectToServer();
    sockets.push(ws);
  });
  await login(page, process.env.USER_NAME, process.env.USER_PASSWORD);
  await page.waitForFunction(() => window.__events.some((e) => e.name === "connection" && e.detail.state === "live"));
  let mark = await typeAndSend(page, "hello before the drop");
  await waitForReply(page, "scripted model", mark);

  // The network goes: the open socket dies, and new ones fail until it is back.
  blocked = true;
  for (const ws of sockets.splice(0)) await ws.close({ code: 1006, reason: "network down" }).catch(() => ws.close());
  await page.waitForFunction(() => window.chat && document.querySelector("#chat").shadowRoot.querySelector(".hc-conn").dataset.state !== "live");
  report.status_while_down = await page.textContent(ui.conn);
  mark = await typeAndSend(page, "ask: Still there?");
  // The run is followed without the socket (polling), so the question shows up anyway.
  const question = await waitForReply(page, "Still there?", mark, 30000);
  report.question_while_down = question.content;
  await shot(page, "widget-reconnect-down");

  // Meanwhile the person answers from another tab: the run goes on and finishes, and this tab,
  // waiting for input with no socket, hears nothing of it.
  const other = await context.newPage();
  watch(other, report);
  await other.goto(page.url());
  await waitForReady(other);
  const otherMark = await typeAndSend(other, "Yes, from the other tab");
  await waitForReply(other, "You said: Yes, from the other tab", otherMark);
  await other.close();
  await page.waitForTimeout(1500);
  report.seen_while_down = await page.evaluate(() => window.__events.some((e) => e.name === "message" && e.detail.content.includes("other tab")));

  // The network is back: pusher-js reconnects, resubscribes, and the widget catches up.
  blocked = false;
  await page.waitForFunction(() => document.querySelector("#chat").shadowRoot.querySelector(".hc-conn").dataset.state === "live", null, { timeout: 60000 });
  report.status_after = await page.textContent(ui.conn);
  const caughtUp = await waitForReply(page, "You said: Yes, from the other tab", mark, 30000);
  report.caught_up = caughtUp.content;
  await page.waitForFunction(() => window.chat.run && window.chat.run.state === "closed");
  mark = await typeAndSend(page, "hello after the drop");
  const answer = await waitForReply(page, "scripted model", mark);
  const deltas = (await events(page, "delta")).filter((e) => e.detail.message_id === answer.id);
  report.deltas_after_reconnect = deltas.length;
  report.messages = await page.$$eval("#chat .hc-msg", (els) => els.map((e) => e.dataset.id));
  report.texts = await page.$$eval("#chat .hc-msg .hc-text", (els) => els.map((e) => e.textContent));
  await shot(page, "widget-reconnect-back");
});
