// The playground beside the agent editor: edit the definition (unsaved), chat with that draft as a
// named test subject, and watch its trace build (state, turns, tokens, credits) from the SSE stream.
import { main, shot, watch } from "../browser.mjs";

const U = process.env.HEDDLE_URL, WS = process.env.WS, AGENT = process.env.AGENT_ID;
const DRAFT = "name: Payments helper\nmodel_class: scripted\ninstructions: The draft.\ntools: []\n";

await main(async (browser, report) => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  const page = await context.newPage();
  watch(page, report);
  report.sse = [];
  page.on("request", (req) => { if (req.url().includes("/playground/runs/")) report.sse.push(new URL(req.url()).pathname); });
  await page.goto(U + process.env.LOGIN_PATH);
  await page.getByRole("button", { name: /sign in/i }).click();
  await page.waitForURL(/\/console\/?$/);
  await page.goto(`${U}/console/w/${WS}/agents/${AGENT}`);
  await page.getByRole("heading", { name: "Playground" }).waitFor();
  // The editor's unsaved text is the draft the playground talks to.
  await page.getByLabel("Agent file (YAML)").fill(DRAFT);
  await page.fill("#pg-subject", "tester");
  await page.selectOption("#pg-source", "draft");
  await page.fill("#pg-input", "who is DEUTDEFF?");
  await page.click(".pg-composer button");
  const trace = page.locator("section.pg-trace");
  await trace.waitFor();
  await page.locator("section.pg-trace .badge", { hasText: "closed" }).waitFor({ timeout: 30000 });
  await page.locator("section.pg-trace tr[data-turn]").first().waitFor();
  report.run_id = await trace.getAttribute("data-run");
  report.trace_head = await trace.locator("h3").innerText();
  report.turns = await trace.locator("tr[data-turn]").allInnerTexts();
  report.events = await trace.locator(".pg-events li").allInnerTexts();
  report.log = await page.locator(".pg-log li").allInnerTexts();
  await shot(page, "console-playground");
  // The saved version is unchanged: still version 1, and the agent page says so.
  report.versions = await page.locator("ol.versions li").allInnerTexts();
  await context.close();
});
