// A `confirm` tool: the tool host starts the transfer and answers its reference; the run waits
// in awaiting_outcome and the card lets the person say whether it went through (the outcome a
// direct-mode caller may post). A message meanwhile is refused in words, not lost.
import { main, shot } from "../browser.mjs";
import { typeAndSend, ui, waitForReply, signedIn } from "./site.mjs";

await main(async (browser, report) => {
  const { page } = await signedIn(browser, report);
  const mark = await typeAndSend(page, 'call: schedule_transfer {"amount": 20, "to": "Linus"}');
  await page.waitForSelector(ui.card, { timeout: 30000 });
  report.card_heading = await page.textContent(`${ui.card} h3`);
  report.card_text = await page.textContent(`${ui.card} .hc-card-text`);
  report.state = await page.evaluate(() => window.chat.run.state);
  // Sending while the run waits for the outcome: kept in the box, explained.
  await typeAndSend(page, "is it done?");
  await page.waitForSelector(`${ui.alert}:not([hidden])`);
  report.busy_alert = await page.textContent(`${ui.alert} .hc-alert-text`);
  report.kept_in_box = await page.inputValue(ui.input);
  await shot(page, "widget-outcome-card");
  await page.click(`${ui.card} button:text-is("Yes, it went through")`);
  const reply = await waitForReply(page, "schedule_transfer", mark);
  report.reply = reply.content;
  report.card_result = await page.textContent("#chat .hc-card-done .hc-card-result");
  await shot(page, "widget-outcome-done");
});
