// Realtime off for the workspace (the test turned it off): the widget says it checks for
// replies, and follows the run by polling; questions and answers still work.
import { main, shot, watch } from "../browser.mjs";
import { login, recordEvents, typeAndSend, ui, waitForReply } from "./site.mjs";

await main(async (browser, report) => {
  const context = await browser.newContext({ viewport: { width: 1000, height: 820 } });
  await recordEvents(context);
  const page = await context.newPage();
  watch(page, report);
  report.sockets = 0;
  page.on("websocket", () => report.sockets++);
  await login(page, process.env.USER_NAME, process.env.USER_PASSWORD);
  report.status = await page.textContent(ui.conn);
  let mark = await typeAndSend(page, "ask: Polling works?");
  await waitForReply(page, "Polling works?", mark);
  mark = await typeAndSend(page, "It does");
  report.answer = (await waitForReply(page, "You said: It does", mark)).content;
  report.deltas = await page.evaluate(() => window.__events.filter((e) => e.name === "delta").length);
  await shot(page, "widget-polling");
});
