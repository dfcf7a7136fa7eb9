// Shared by the browser tests: launch Debian's Chromium headless through playwright-core (never
// a downloaded browser), save named screenshots, and report one JSON object on stdout.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

export const executablePath = process.env.HEDDLE_CHROMIUM || "/usr/bin/chromium";
export const screenshotDir = process.env.HEDDLE_SCREENSHOTS || "screenshots";

export async function launch() {
  return chromium.launch({ executablePath, headless: true, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
}

export async function shot(page, name) {
  mkdirSync(screenshotDir, { recursive: true });
  const path = join(screenshotDir, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

// Run `body(browser, report)`; print {"ok": true, ...report} or {"ok": false, "error"} and exit.
export async function main(body) {
  const report = { console_errors: [] };
  const browser = await launch();
  try {
    await body(browser, report);
    console.log(JSON.stringify({ ok: true, ...report }));
  } catch (err) {
    console.log(JSON.stringify({ ok: false, error: String(err && err.stack || err), ...report }));
    process.exitCode = 1;
  } finally {
    await browser.close();
  }
}

// Collect page errors and console errors, so a test can assert the page ran clean.
export function watch(page, report) {
  page.on("pageerror", (e) => report.console_errors.push(`pageerror: ${e.message}`));
  page.on("console", (m) => { if (m.type() === "error") report.console_errors.push(`console: ${m.text()}`); });
}
