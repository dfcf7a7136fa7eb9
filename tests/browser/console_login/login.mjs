// An operator opens a login link in Chromium, presses "Sign in", lands on /console, and the
// session cookie (Secure, HttpOnly, SameSite=Strict, Path=/console) then authorises the console
// API from the page, over plain http on a loopback host (HEDDLE_LINKS: one link per host).
import { main, shot, watch } from "../browser.mjs";

await main(async (browser, report) => {
  report.hosts = [];
  for (const link of JSON.parse(process.env.HEDDLE_LINKS)) {
    const context = await browser.newContext();
    const page = await context.newPage();
    watch(page, report);
    const origin = new URL(link).origin;
    const found = { origin };
    const landing = await page.goto(link);
    found.page_status = landing.status();
    await Promise.all([page.waitForURL(origin + "/console"), page.click("#sign-in")]);
    found.landed = page.url();
    const cookie = (await context.cookies(origin + "/console")).find((c) => c.name === "heddle_console");
    found.cookie = cookie ? { secure: cookie.secure, httpOnly: cookie.httpOnly, sameSite: cookie.sameSite,
                              path: cookie.path } : null;
    // From the page itself, as the console's code does: the cookie goes with same-origin fetches.
    found.api = await page.evaluate(async () => {
      const me = await fetch("/console/api/me");
      const meBody = await me.json();
      const headers = { "Content-Type": "application/json", "X-CSRF-Token": meBody.data && meBody.data.csrf_token };
      const made = await fetch("/console/api/workspaces", { method: "POST", headers,
                                                           body: JSON.stringify({ name: "from Chromium" }) });
      const forged = await fetch("/console/api/workspaces", { method: "POST",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": "forged" },
        body: JSON.stringify({ name: "forged" }) });
      return { me_status: me.status, email: meBody.data && meBody.data.email, create_status: made.status,
               forged_status: forged.status, forged_code: (await forged.json()).error.code,
               script_sees_cookie: document.cookie.includes("heddle_console") };
    });
    // The link is spent: opening it again shows the 410 page.
    const again = await page.goto(link);
    found.reuse_status = again.status();
    found.reuse_text = await page.textContent("body");
    report.screenshot = await shot(page, "console-login-reused");
    report.hosts.push(found);
    await context.close();
  }
});
