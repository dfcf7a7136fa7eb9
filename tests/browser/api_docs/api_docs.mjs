// /docs and /redoc in Chromium: nothing is fetched from outside the server; /docs opens on the
// operations and Authorize (the error-code table comes after every operation); and "Try it out"
// with a workspace key (Authorize) succeeds with the bodies the page fills in, POSTs included:
// as they stand, or with only the agent id a user must supply replaced (tests/browser/api_docs).
import { main, shot, watch } from "../browser.mjs";

const base = process.env.HEDDLE_URL;
const key = process.env.HEDDLE_KEY;
const placeholder = process.env.HEDDLE_AGENT_PLACEHOLDER;

// Swagger UI: expand an operation, Try it out, fill its fields (`body` is a function of the
// pre-filled body, so a test changes only what a user would), Execute; the live response.
async function tryIt(page, opId, fill = {}, prefilled = {}) {
  const op = page.locator(`#operations-${opId}`);
  await op.locator(".opblock-summary").first().click();
  await op.locator("button.try-out__btn").click();
  const textarea = op.locator("textarea.body-param__text");
  if (await textarea.count()) prefilled[opId] = await textarea.inputValue();
  for (const [name, value] of Object.entries(fill)) {
    if (name === "body") await textarea.fill(value(prefilled[opId]));
    else await op.locator(`tr[data-param-name="${name}"] input`).fill(value);
  }
  await op.locator("button.execute").click();
  const row = op.locator(".live-responses-table tr.response").first();
  const status = row.locator(".response-col_status");
  await status.waitFor({ timeout: 20000 });
  const text = await row.locator(".response-col_description pre").first().innerText();
  let body = null;
  try { body = JSON.parse(text); } catch { body = text; }
  return { status: Number((await status.innerText()).trim().split(/\s/)[0]), body };
}

const top = async (locator) => (await locator.first().boundingBox())?.y ?? null;

await main(async (browser, report) => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const outside = [];
  context.on("request", (r) => { if (!r.url().startsWith(base) && !r.url().startsWith("data:") && !r.url().startsWith("blob:")) outside.push(r.url()); });
  const page = await context.newPage();
  watch(page, report);

  await page.goto(`${base}/redoc`);
  await page.locator("h1").first().waitFor({ timeout: 30000 });
  await page.waitForTimeout(500);
  report.redoc_title = (await page.locator("h1").first().innerText()).trim();
  await page.locator('[data-section-id="tag/errors"]').first().waitFor({ state: "attached", timeout: 30000 });
  report.redoc_error_section = await page.locator('[data-section-id="tag/errors"]').filter({ hasText: "invalid_request" }).count();
  await shot(page, "api-docs-redoc");

  await page.goto(`${base}/docs`);
  await page.locator(".opblock").first().waitFor({ timeout: 30000 });
  await shot(page, "api-docs-opening");
  // Where the page opens: Authorize and the first operation on the first screen, the error table
  // below the last operation.
  report.viewport_height = 800;
  report.authorize_y = await top(page.locator("button.authorize"));
  report.first_operation_y = await top(page.locator(".opblock"));
  report.last_operation_y = await top(page.locator(".opblock-tag-section .opblock").last());  // webhooks aside
  report.error_table_y = await top(page.locator("#operations-tag-errors").filter({ hasText: "invalid_request" }));
  report.intro_tables = await page.locator(".information-container table").count();

  await page.locator("button.authorize").first().click();
  const dialog = page.locator(".auth-container").filter({ hasText: "workspaceKey" });
  await dialog.locator("input").fill(key);
  await dialog.locator("button.authorize").click();
  await page.locator("button.btn-done").first().click();

  const prefilled = {};
  const workspace = await tryIt(page, "workspace-current_workspace");
  const identify = await tryIt(page, "identify-identify", {}, prefilled);
  const thread = await tryIt(page, "loom-create_thread",
    { "Service-Subject": "web:docs", body: (text) => text.replace(placeholder, process.env.HEDDLE_AGENT) }, prefilled);
  const threadId = thread.body?.data?.id;
  const message = await tryIt(page, "loom-post_message", { "Service-Subject": "web:docs", thread_id: threadId }, prefilled);
  report.statuses = { workspace: workspace.status, identify: identify.status, create_thread: thread.status,
                      post_message: message.status };
  report.identify_result = identify.body?.data?.result ?? null;
  if (message.status !== 202) report.post_message_answer = message.body;
  report.prefilled = prefilled;
  await shot(page, "api-docs-try-it-out");
  report.outside = outside;
});
