// /docs and /redoc in Chromium: nothing is fetched from outside the server, and "Try it out"
// with a workspace key (Authorize) succeeds, POSTs included (tests/browser/api_docs).
import { main, shot, watch } from "../browser.mjs";

const base = process.env.HEDDLE_URL;
const key = process.env.HEDDLE_KEY;

// Swagger UI: expand an operation, Try it out, fill its fields, Execute; the live response's status.
async function tryIt(page, opId, fill = {}) {
  const op = page.locator(`#operations-${opId}`);
  await op.locator(".opblock-summary").first().click();
  await op.locator("button.try-out__btn").click();
  for (const [name, value] of Object.entries(fill)) {
    if (name === "body") await op.locator("textarea.body-param__text").fill(value);
    else await op.locator(`tr[data-param-name="${name}"] input`).fill(value);
  }
  await op.locator("button.execute").click();
  const status = op.locator(".live-responses-table tr.response .response-col_status").first();
  await status.waitFor({ timeout: 20000 });
  return Number((await status.innerText()).trim().split(/\s/)[0]);
}

await main(async (browser, report) => {
  const context = await browser.newContext();
  const outside = [];
  context.on("request", (r) => { if (!r.url().startsWith(base) && !r.url().startsWith("data:") && !r.url().startsWith("blob:")) outside.push(r.url()); });
  const page = await context.newPage();
  watch(page, report);

  await page.goto(`${base}/redoc`);
  await page.locator("h1").first().waitFor({ timeout: 30000 });
  await page.waitForTimeout(500);
  report.redoc_title = (await page.locator("h1").first().innerText()).trim();
  await shot(page, "api-docs-redoc");

  await page.goto(`${base}/docs`);
  await page.locator(".opblock").first().waitFor({ timeout: 30000 });
  await page.locator("button.authorize").first().click();
  const dialog = page.locator(".auth-container").filter({ hasText: "workspaceKey" });
  await dialog.locator("input").fill(key);
  await dialog.locator("button.authorize").click();
  await page.locator("button.btn-done").first().click();

  report.statuses = {
    workspace: await tryIt(page, "workspace-current_workspace"),
    identify: await tryIt(page, "identify-identify", { body: '{"identifier": "DEUTDEFF"}' }),
    create_thread: await tryIt(page, "loom-create_thread",
      { "Service-Subject": "web:docs", body: `{"agent": "${process.env.HEDDLE_AGENT}"}` }),
  };
  await shot(page, "api-docs-try-it-out");
  report.outside = outside;
});
