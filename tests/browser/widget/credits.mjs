// The workspace has run out of credits (the test drained it): the person is told so in words.
import { main, shot } from "../browser.mjs";
import { typeAndSend, ui, signedIn } from "./site.mjs";

await main(async (browser, report) => {
  const { page } = await signedIn(browser, report);
  await typeAndSend(page, "hello");
  await page.waitForSelector(`${ui.alert}:not([hidden])`, { timeout: 30000 });
  report.alert = await page.textContent(`${ui.alert} .hc-alert-text`);
  report.error = await page.evaluate(() => window.__events.filter((e) => e.name === "error").map((e) => e.detail)[0]);
  await shot(page, "widget-error-credits");

  // Unmount: the widget is gone from the element (its socket and timers with it).
  await page.evaluate(() => window.chat.unmount());
  report.children_after_unmount = await page.evaluate(() => document.querySelector("#chat").shadowRoot.childElementCount);
});
