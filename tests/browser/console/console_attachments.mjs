// A message's image in the console (issue 43): the run trace and the thread view show its
// thumbnail (loaded from the console's download route), name, size and a download link; the
// download is an attachment with nosniff; another workspace's path answers 404.
import { main, shot, watch } from "../browser.mjs";

const U = process.env.HEDDLE_URL, WS = process.env.WS;

const files = (page) => page.locator(".attachments .attachment").evaluateAll((els) => els.map((el) => {
  const img = el.querySelector("img");
  const a = el.querySelector("a[download]");
  return { name: el.querySelector(".attachment-name").textContent, text: el.innerText,
           thumb: img ? img.complete && img.naturalWidth : null, href: a && a.getAttribute("href"), download: a && a.getAttribute("download") };
}));

async function loaded(page) {
  await page.locator(".attachments img").first().waitFor();
  await page.waitForFunction(() => { const i = document.querySelector(".attachments img"); return i && i.complete && i.naturalWidth > 0; });
}

await main(async (browser, report) => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  watch(page, report);
  await page.goto(U + process.env.LOGIN_PATH);
  await page.getByRole("button", { name: /sign in/i }).click();
  await page.waitForURL(/\/console\/?$/);

  await page.goto(`${U}/console/w/${WS}/runs/${process.env.RUN_ID}`);
  await page.getByRole("heading", { name: "Run trace" }).waitFor();
  await loaded(page);
  report.trace_first = await page.locator(".timeline > li").first().innerText();
  report.trace_files = await files(page);
  await shot(page, "console-trace-attachment");

  await page.goto(`${U}/console/w/${WS}/threads/${process.env.THREAD_ID}`);
  await page.getByRole("heading", { name: "Conversation" }).waitFor();
  await loaded(page);
  report.thread_files = await files(page);
  await shot(page, "console-thread-attachment");

  const href = report.thread_files[0].href;
  const got = await context.request.get(U + href);
  report.download = { status: got.status(), disposition: got.headers()["content-disposition"],
                      nosniff: got.headers()["x-content-type-options"], type: got.headers()["content-type"],
                      size: (await got.body()).length };
  const other = await context.request.get(U + href.replace(`/workspaces/${WS}/`, "/workspaces/ws_someone_else/"));
  report.other_workspace = { status: other.status(), code: (await other.json()).error.code };
  const signedOut = await (await browser.newContext()).request.get(U + href);
  report.signed_out_status = signedOut.status();
});
