// Issue 19's whole journey in one Chromium: an operator signs in through a one-time link and
// creates an agent in the console; a customer of the example site talks to that agent through
// the widget (a streamed reply, an answered question, an approved tool); the operator then finds
// that run's trace in the console, with its tool call and its cost. A screenshot of each step.
import { main, shot, watch } from "../browser.mjs";
import { login, recordEvents, typeAndSend, ui, waitForReply } from "../widget/site.mjs";

const U = process.env.HEDDLE_URL, SITE = process.env.SITE_URL, WS = process.env.WS;

function check(cond, what) { if (!cond) throw new Error(`check failed: ${what}`); }

await main(async (browser, report) => {
  // --- the operator: login link, then a new agent from YAML ---
  const ops = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const console_ = await ops.newPage();
  watch(console_, report);
  await console_.goto(U + process.env.LOGIN_PATH);
  await shot(console_, "journey-1-login-link");
  await console_.getByRole("button", { name: /sign in/i }).click();
  await console_.getByRole("heading", { name: "Workspaces" }).waitFor();
  report.cookie = (await ops.cookies()).filter((c) => c.name === "heddle_console")
    .map((c) => ({ httpOnly: c.httpOnly, secure: c.secure, sameSite: c.sameSite, path: c.path }))[0];
  await console_.goto(`${U}/console/w/${WS}/agents`);
  await console_.locator("table[aria-label='Agents']").waitFor();
  await console_.getByLabel("Agent file (YAML)").fill(process.env.AGENT_YAML);
  await console_.getByRole("button", { name: "Create agent" }).click();
  await console_.getByRole("heading", { name: "Support desk" }).waitFor();
  const agentId = console_.url().match(/agents\/(agent_[a-z0-9]+)/)[1];
  report.agent_id = agentId;
  await shot(console_, "journey-2-agent-created");

  // --- the customer: the example site's widget, talking to that agent ---
  const customer = await browser.newContext({ viewport: { width: 1000, height: 860 } });
  await recordEvents(customer);
  const page = await customer.newPage();
  watch(page, report);
  await login(page, process.env.USER_NAME, process.env.USER_PASSWORD);
  await page.goto(`${SITE}/?agent=${agentId}`);
  await page.waitForFunction(() => window.__events.some((e) => e.name === "ready"), null, { timeout: 30000 });
  report.widget_agent = await page.evaluate(() => document.getElementById("chat").dataset.agent);

  // A streamed reply: pieces arrive before the final message.
  let mark = await typeAndSend(page, "hello");
  const hello = await waitForReply(page, "scripted model", mark);
  report.stream = await page.evaluate(([id]) => {
    const final = window.__events.find((e) => e.name === "message" && e.detail.id === id);
    const deltas = window.__events.filter((e) => e.name === "delta" && e.detail.message_id === id);
    return { deltas: deltas.length, before_final: deltas.every((d) => d.at < final.at) };
  }, [hello.id]);
  await shot(page, "journey-3-widget-streamed");

  // An answered question.
  mark = await typeAndSend(page, "ask: What is your name?");
  await waitForReply(page, "What is your name?", mark);
  await page.waitForFunction(() => window.chat.run && window.chat.run.state === "awaiting_input");
  await shot(page, "journey-4-widget-question");
  mark = await typeAndSend(page, "Ada");
  report.answer = (await waitForReply(page, "You said:", mark)).content;

  // An approved tool: above 100, the person approves it first.
  mark = await typeAndSend(page, 'call: send_transfer {"amount": 250, "to": "Ada"}');
  await page.waitForSelector(ui.card, { timeout: 30000 });
  report.card = await page.textContent(ui.card);
  await shot(page, "journey-5-widget-approval");
  await page.click(`${ui.card} button:text-is("Approve")`);
  const done = await waitForReply(page, "send_transfer", mark);
  report.tool_reply = done.content;
  await page.waitForFunction(() => window.chat.run.terminal);
  report.tool_run = await page.evaluate(() => ({ id: window.chat.run.id, state: window.chat.run.state }));
  // The reply with the tool's result is in view at the end of the log (its fields are taller
  // than the streamed text they replace).
  report.reply_in_view = await page.$eval(`#chat .hc-assistant[data-id="${done.id}"]`, (el) => {
    const log = el.closest(".hc-log"), r = el.getBoundingClientRect(), l = log.getBoundingClientRect();
    return r.bottom <= l.bottom + 1 && r.top >= l.top - 1;
  });
  await shot(page, "journey-6-widget-done");

  // --- the operator finds that run: the runs list, then its trace ---
  const runId = report.tool_run.id;
  await console_.goto(`${U}/console/w/${WS}/runs?agent=${agentId}`);
  await console_.locator(`tr[data-run="${runId}"]`).waitFor({ timeout: 15000 });
  report.runs_listed = await console_.locator("tbody tr").count();
  await shot(console_, "journey-7-console-runs");
  await console_.locator(`tr[data-run="${runId}"] a`).first().click();
  await console_.getByRole("heading", { name: "Run trace" }).waitFor();
  await console_.locator(".toolcall").first().waitFor();
  const trace = await console_.locator("main").innerText();
  report.trace = {
    tool_call: trace.includes("send_transfer") && trace.includes("250"),
    approved: /approv/i.test(trace),
    tool_status: await console_.locator(".toolcall .badge").first().innerText(),
    cost_text: await console_.locator(".stats >> text=Cost").locator("..").innerText(),
    tokens_text: await console_.locator(".stats >> text=Tokens").locator("..").innerText(),
  };
  await shot(console_, "journey-8-console-trace");
  check(report.console_errors.length === 0, `no page errors: ${report.console_errors.join("; ")}`);
});
