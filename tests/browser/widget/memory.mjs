// "What I remember": the person opens the panel, sees the facts kept about them (seeded by the
// test), deletes one, and after a reload the panel still lists only the other.
import { main, shot } from "../browser.mjs";
import { signedIn, waitForReady } from "./site.mjs";

const toggle = "#chat .hc-memory-toggle";
const items = "#chat .hc-memory-item .hc-memory-text";

async function texts(page) {
  return page.locator(items).allTextContents();
}

await main(async (browser, report) => {
  const { page } = await signedIn(browser, report);
  report.toggle_text = await page.textContent(toggle);
  report.expanded_before = await page.getAttribute(toggle, "aria-expanded");
  await page.click(toggle);
  await page.waitForFunction(() => document.querySelector("#chat").shadowRoot.querySelectorAll(".hc-memory-item").length === 2,
    null, { timeout: 30000 });
  report.expanded_after = await page.getAttribute(toggle, "aria-expanded");
  report.before = await texts(page);
  await shot(page, "widget-memory-panel");
  await page.click('#chat .hc-memory-item:has-text("Prefers replies in French.") .hc-memory-delete');
  await page.waitForFunction(() => document.querySelector("#chat").shadowRoot.querySelectorAll(".hc-memory-item").length === 1,
    null, { timeout: 30000 });
  report.after = await texts(page);
  report.status = await page.textContent("#chat .hc-memory-status");
  report.memory_events = await page.evaluate(() => window.__events.filter((e) => e.name === "memory").map((e) => e.detail));
  await page.reload();
  await waitForReady(page);
  await page.click(toggle);
  await page.waitForFunction(() => document.querySelector("#chat").shadowRoot.querySelectorAll(".hc-memory-item").length === 1,
    null, { timeout: 30000 });
  report.after_reload = await texts(page);
});
