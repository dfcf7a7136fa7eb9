// Thumbs on an assistant reply: a thumbs-down with a comment, kept after a reload; then the
// operator finds it, with its comment, on the console's Feedback page, linked to the run's trace.
import { main, shot } from "../browser.mjs";
import { typeAndSend, waitForReply, signedIn, waitForReady } from "./site.mjs";

const U = process.env.HEDDLE_URL, WS = process.env.WS;
const COMMENT = "It did not answer my question.";

await main(async (browser, report) => {
  const { context, page } = await signedIn(browser, report);
  const mark = await typeAndSend(page, "hello");
  const reply = await waitForReply(page, "scripted model", mark);
  report.message_id = reply.id;
  const bubble = `#chat .hc-msg[data-id="${reply.id}"]`;
  // The thumbs are drawn (SVG strokes, no emoji font needed): each button's name, text and the
  // size its icon takes on the page.
  report.thumbs = await page.$$eval(`${bubble} .hc-rate`, (buttons) => buttons.map((b) => {
    const box = b.querySelector("svg")?.getBoundingClientRect();
    return { label: b.getAttribute("aria-label"), text: b.textContent, icon: box ? [Math.round(box.width), Math.round(box.height)] : null,
             paths: b.querySelectorAll("svg path").length };
  }));
  await page.click(`${bubble} .hc-rate[data-rating="down"]`);
  await page.locator(`${bubble} .hc-feedback-comment`).waitFor({ state: "visible" });
  await page.fill(`${bubble} .hc-feedback-comment`, COMMENT);
  await page.click(`${bubble} .hc-feedback-send`);
  await page.locator(`${bubble} .hc-feedback-thanks`).filter({ hasText: "Thanks" }).waitFor();
  await page.waitForFunction((sel) => {
    const root = document.querySelector("#chat").shadowRoot;
    return root.querySelector(sel.replace("#chat ", ""))?.querySelector(".hc-feedback-form")?.hidden === true;
  }, bubble);
  await shot(page, "widget-feedback-down");

  // Reload: the choice is still shown on the reply.
  await page.reload();
  await waitForReady(page);
  await page.locator(`${bubble} .hc-feedback`).waitFor();
  report.after_reload = {
    down: await page.getAttribute(`${bubble} .hc-rate[data-rating="down"]`, "aria-pressed"),
    up: await page.getAttribute(`${bubble} .hc-rate[data-rating="up"]`, "aria-pressed"),
  };

  // The operator's console: the Feedback page lists it, down-rated, with the comment.
  const ops = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const console_ = await ops.newPage();
  await console_.goto(U + process.env.LOGIN_PATH);
  await console_.getByRole("button", { name: /sign in/i }).click();
  await console_.waitForURL(/\/console\/?$/);
  await console_.goto(`${U}/console/w/${WS}/feedback`);
  const row = console_.locator(`tr[data-feedback="${reply.id}"]`);
  await row.waitFor({ timeout: 30000 });
  report.console_row = await row.innerText();
  report.trace_href = await row.getByRole("link", { name: "trace" }).getAttribute("href");
  await row.getByRole("link", { name: "trace" }).click();
  await console_.waitForURL(new RegExp(`/runs/${reply.run_id}`));
  report.trace_page = (await console_.locator("main").innerText()).slice(0, 2000);
  await shot(console_, "console-feedback");
  await context.close();
  await ops.close();
});
