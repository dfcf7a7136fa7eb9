// Shared by the widget's browser tests: the example site's login, the widget's parts (Playwright
// CSS pierces the widget's open shadow root), and a log of the widget's events in page order.
import { watch } from "../browser.mjs";

export const SITE = process.env.SITE_URL;

// Records every heddle-chat:* event the widget dispatches, with a sequence number, before any
// page script runs: the tests read the order of deltas and messages from it.
export async function recordEvents(context) {
  await context.addInitScript(() => {
    window.__events = [];
    for (const name of ["ready", "message", "delta", "run", "approval", "outcome", "connection", "error", "memory"]) {
      document.addEventListener(`heddle-chat:${name}`, (e) => window.__events.push({ name, detail: e.detail, at: window.__events.length }));
    }
  });
}

export async function login(page, user = "alice", password = "wonderland") {
  await page.goto(`${SITE}/login`);
  await page.fill("#username", user);
  await page.fill("#password", password);
  await Promise.all([page.waitForURL(`${SITE}/`), page.click("button[type=submit]")]);
  await waitForReady(page);
}

// Waits for the widget's `ready` event. On a timeout the error says what the widget did instead
// (the events it sent, an `error` event's code and status, its connection line), not just
// "Timeout": a reload that is not ready in 30 s has flaked once under a loaded suite.
export async function waitForReady(page, timeout = 30000) {
  try {
    await page.waitForFunction(() => window.__events && window.__events.some((e) => e.name === "ready"), null, { timeout });
  } catch (err) {
    const seen = await page.evaluate(() => ({
      events: (window.__events || []).map((e) => (e.name === "error" ? { error: e.detail } : e.name)),
      connection: document.querySelector("#chat")?.shadowRoot?.querySelector(".hc-conn")?.textContent ?? null,
    })).catch((e) => ({ unreadable: String(e) }));
    throw new Error(`the widget was not ready within ${timeout} ms: ${JSON.stringify(seen)} (${err.message.split("\n")[0]})`);
  }
}

export const ui = {
  input: "#chat .hc-input",
  send: "#chat .hc-send",
  stop: "#chat .hc-stop",
  log: "#chat .hc-log",
  alert: "#chat .hc-alert",
  conn: "#chat .hc-conn",
  card: "#chat .hc-card:not(.hc-card-done)",
  assistant: "#chat .hc-assistant:not(.hc-streaming)",
};

export async function events(page, name) {
  return page.evaluate((n) => window.__events.filter((e) => !n || e.name === n), name);
}

/** Wait for a final assistant message containing `text`, among the events from `since` on. */
export async function waitForReply(page, text, since = 0, timeout = 30000) {
  const handle = await page.waitForFunction(([t, from]) => {
    const m = window.__events.find((e) => e.at >= from && e.name === "message" && e.detail.role === "assistant" && e.detail.content.includes(t));
    return m && m.detail;
  }, [text, since], { timeout });
  return handle.jsonValue();
}

/** Type into the widget and press Enter; returns the event count before it (for waitForReply). */
export async function typeAndSend(page, text) {
  const since = await page.evaluate(() => window.__events.length);
  await page.fill(ui.input, text);
  await page.press(ui.input, "Enter");
  return since;
}

/** A fresh browser context recording the widget's events, its page watched for errors, and the
 * example site's user (USER_NAME / USER_PASSWORD) logged in with the widget ready. */
export async function signedIn(browser, report) {
  const context = await browser.newContext({ viewport: { width: 1000, height: 820 } });
  await recordEvents(context);
  const page = await context.newPage();
  watch(page, report);
  await login(page, process.env.USER_NAME, process.env.USER_PASSWORD);
  return { context, page };
}
