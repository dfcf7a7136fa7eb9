// A tool behind `approve_when`: the approval card shows the call; Approve makes it (the tool
// host answers with a transfer reference) or Deny declines it (the host is never called).
import { main, shot } from "../browser.mjs";
import { events, typeAndSend, ui, waitForReply, signedIn } from "./site.mjs";

const decision = process.env.DECISION; // "Approve" or "Deny"

await main(async (browser, report) => {
  const { page } = await signedIn(browser, report);
  const mark = await typeAndSend(page, 'call: send_transfer {"amount": 250, "to": "Ada"}');
  await page.waitForSelector(ui.card, { timeout: 30000 });
  report.card_heading = await page.textContent(`${ui.card} h3`);
  report.card_fields = await page.$$eval(`${ui.card} dd`, (els) => els.map((e) => e.textContent));
  report.card_note = await page.textContent(`${ui.card} .hc-card-note`);
  report.pending = await page.evaluate(() => window.chat.run.pending);
  // Focus moved to the card (the person was typing in the widget).
  report.focused = await page.evaluate(() => document.querySelector("#chat").shadowRoot.activeElement?.textContent);
  await shot(page, `widget-approval-${decision.toLowerCase()}-card`);
  let reply;
  if (decision === "Message") {
    // Writing instead of answering declines the call; the message is the run's next input.
    const sent = await typeAndSend(page, "never mind");
    reply = await waitForReply(page, "scripted model", sent);
  } else {
    await page.click(`${ui.card} button:text-is("${decision}")`);
    reply = await waitForReply(page, "send_transfer", mark);
  }
  report.reply = reply.content;
  report.card_result = await page.textContent("#chat .hc-card-done .hc-card-result");
  report.answers = await events(page, "approval");
  report.focus_after = await page.evaluate(() => document.querySelector("#chat").shadowRoot.activeElement?.className);
  await page.waitForFunction(() => window.chat.run.terminal);
  report.run_state = await page.evaluate(() => window.chat.run.state);
  await shot(page, `widget-approval-${decision.toLowerCase()}-done`);
});
