// The harness itself: open a page of the server under test and screenshot it.
import { main, shot, watch } from "./browser.mjs";

await main(async (browser, report) => {
  const page = await browser.newPage();
  watch(page, report);
  const response = await page.goto(process.env.HEDDLE_URL + "/console");
  report.status = response.status();
  report.title = await page.title();
  report.screenshot = await shot(page, "smoke-console");
});
