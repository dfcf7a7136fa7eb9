// An answered question: `ask: …` puts the run in awaiting_input; the next message answers it
// and the same run finishes with "You said: <answer>".
import { main, shot } from "../browser.mjs";
import { events, typeAndSend, waitForReply, signedIn } from "./site.mjs";

await main(async (browser, report) => {
  const { page } = await signedIn(browser, report);
  const asked = await typeAndSend(page, "ask: What is your name?");
  const question = await waitForReply(page, "What is your name?", asked);
  await page.waitForFunction(() => window.chat.run && window.chat.run.state === "awaiting_input");
  report.hint = await page.textContent("#chat .hc-hint");
  report.question_run = question.run_id;
  await shot(page, "widget-question");
  const answered = await typeAndSend(page, "Ada Lovelace");
  const answer = await waitForReply(page, "You said:", answered);
  report.answer = answer.content;
  report.answer_run = answer.run_id;
  await page.waitForFunction(() => window.chat.run.state === "closed");
  report.hint_after = await page.isVisible("#chat .hc-hint");
  report.errors = await events(page, "error");
  await shot(page, "widget-question-answered");

  // Stop: a question left unanswered is cancelled with the Stop button; no alarm, a note.
  const again = await typeAndSend(page, "ask: Shall we stop here?");
  await waitForReply(page, "Shall we stop here?", again);
  await page.waitForSelector("#chat .hc-stop:not([hidden])");
  await page.click("#chat .hc-stop");
  await page.waitForFunction(() => window.chat.run.state === "failed");
  report.cancelled = await page.evaluate(() => window.chat.run.error);
  report.stop_hidden = await page.isHidden("#chat .hc-stop");
  report.notice = await page.textContent("#chat .hc-notice:last-child");
  report.alert_hidden = await page.isHidden("#chat .hc-alert");
});
