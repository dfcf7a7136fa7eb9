// The operator console end to end, against a real Heddle server seeded by the test (CLI + /v1):
// sign in with a login link, then every page with real data, live updates, mutations (each with
// X-CSRF-Token) and readable errors. Screenshots of each page go to the screenshot folder.
import { main, shot as fullShot, watch } from "../browser.mjs";

// Full-page screenshots from the top, so the sticky top bar sits where a person sees it.
async function shot(page, name) {
  await page.evaluate(() => window.scrollTo(0, 0));
  return fullShot(page, name);
}

const U = process.env.HEDDLE_URL;
const WS = process.env.WS, WS_NAME = process.env.WS_NAME, KEY = process.env.KEY_SECRET;
const RUN = process.env.RUN_ID, THREAD = process.env.THREAD_ID, AGENT = process.env.AGENT_ID;

function check(cond, what) { if (!cond) throw new Error(`check failed: ${what}`); }

async function v1(method, path, body, subject) {
  const headers = { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" };
  if (subject) headers["Service-Subject"] = subject;
  const r = await fetch(U + path, { method, headers, body: body && JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}

async function text(page) { return page.locator("main").innerText(); }

await main(async (browser, report) => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  watch(page, report);
  // Every state-changing console API call must carry the CSRF header.
  report.mutations = [];
  page.on("request", (req) => {
    if (req.url().includes("/console/api/") && req.method() !== "GET") {
      report.mutations.push({ method: req.method(), path: new URL(req.url()).pathname, csrf: !!req.headers()["x-csrf-token"] });
    }
  });

  // --- signed out, then the login link ---
  await page.goto(U + "/console");
  await page.getByRole("heading", { name: "You are not signed in" }).waitFor();
  report.signed_out_mentions_cli = (await page.locator("body").innerText()).includes("heddle operator create --email");
  await shot(page, "console-signed-out");

  await page.goto(U + process.env.LOGIN_PATH);
  // The sign-in page wears the console's stylesheet: its card, brand line and primary button.
  report.login_look = await page.evaluate(() => ({
    sheet: [...document.styleSheets].some((s) => (s.href || "").includes("/console/assets/")),
    card: getComputedStyle(document.querySelector(".signin.card")).backgroundColor,
    button: getComputedStyle(document.querySelector("#sign-in")).backgroundColor,
    logo: document.querySelectorAll(".brand-line .logo").length,
  }));
  await shot(page, "console-login-link");
  await page.getByRole("button", { name: /sign in/i }).click();
  await page.waitForURL(/\/console\/?$/);
  await page.getByRole("heading", { name: "Workspaces" }).waitFor();
  await page.locator("main").getByText(WS_NAME).first().waitFor();
  await shot(page, "console-workspaces");
  // The same link a second time is refused.
  const again = await context.request.get(U + process.env.LOGIN_PATH, { maxRedirects: 0 });
  const againPost = await context.request.post(U + process.env.LOGIN_PATH, { maxRedirects: 0 });
  report.login_reuse_status = [again.status(), againPost.status()];

  // --- the workspace opens on its overview: runs, failures by code, spend, run time, tokens ---
  await page.getByRole("link", { name: new RegExp(WS_NAME) }).click();
  await page.waitForURL(new RegExp(`/console/w/${WS}/overview`));
  await page.locator("table[aria-label='Failures by code'] tr[data-code]").first().waitFor();
  report.overview = {
    stats: await page.locator(".stats a.stat").allInnerTexts(),
    codes: await page.locator("table[aria-label='Failures by code'] tr[data-code]").allInnerTexts(),
    tokens: await page.locator("table[aria-label='Tokens by model class'] tbody tr").allInnerTexts(),
  };
  await shot(page, "console-overview");
  await page.getByRole("button", { name: "Last week" }).click();
  await page.waitForURL(/period=week/);
  await page.locator("table[aria-label='Failures by code'] tr[data-code]").first().waitFor();
  report.overview.week_codes = await page.locator("table[aria-label='Failures by code'] tr[data-code]").allInnerTexts();
  // On a phone: the navigation is there, nothing scrolls sideways.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(200);
  report.overview.phone = await page.evaluate(() => ({
    scroll_width: document.documentElement.scrollWidth, width: window.innerWidth,
    nav_visible: [...document.querySelectorAll("nav.sidenav a")].filter((a) => a.getBoundingClientRect().height > 0).length,
  }));
  await page.screenshot({ path: `${process.env.HEDDLE_SCREENSHOTS || "screenshots"}/console-overview-390.png` });
  await page.goto(`${U}/console/w/${WS}/runs`);
  await page.locator("tbody tr").first().waitFor();
  report.runs_phone = await page.evaluate(() => ({ scroll_width: document.documentElement.scrollWidth, width: window.innerWidth }));
  await page.screenshot({ path: `${process.env.HEDDLE_SCREENSHOTS || "screenshots"}/console-runs-390.png` });
  await page.setViewportSize({ width: 1280, height: 860 });
  // A failure code links to the runs it counts.
  await page.goto(`${U}/console/w/${WS}/overview`);
  await page.locator("table[aria-label='Failures by code'] tr[data-code] a").first().click();
  await page.waitForURL(/error_code=/);
  await page.locator("tbody tr").first().waitFor();
  report.failed_list = await page.locator("tbody tr").allInnerTexts();

  // --- runs: real rows, filters, live update ---
  await page.goto(`${U}/console/w/${WS}/runs`);
  await page.locator(`tr[data-run="${RUN}"]`).waitFor();
  report.runs_rows = await page.locator("tbody tr").count();
  await shot(page, "console-runs");

  await page.getByLabel("State").selectOption("failed");
  await page.waitForURL(/state=failed/);
  await page.locator(`tr[data-run="${RUN}"]`).waitFor({ state: "detached" });
  report.filter_failed_hides_closed_run = true;
  await page.getByLabel("State").selectOption("closed");
  await page.locator(`tr[data-run="${RUN}"]`).waitFor();
  await page.getByLabel("Subject").fill("web:nobody");
  await page.getByLabel("Subject").press("Enter");
  await page.locator("main").getByText("No runs match").waitFor();
  report.filter_subject_empty = true;
  await page.getByRole("button", { name: "Clear" }).click();
  await page.locator(`tr[data-run="${RUN}"]`).waitFor();

  // Live: a run started elsewhere appears without a reload (the marker survives).
  await page.evaluate(() => { window.__noReload = true; });
  await page.getByLabel("Subject").fill("web:carol");
  await page.getByLabel("Subject").press("Enter");
  await page.locator("main").getByText("No runs match").waitFor();
  const thread = await v1("POST", "/v1/loom/threads", { agent: AGENT }, "web:carol");
  const sent = await v1("POST", `/v1/loom/threads/${thread.body.data.id}/messages`, { content: "call: identify {\"identifier\": \"DEUTDEFF\"}" }, "web:carol");
  const liveRun = sent.body.data.run_id;
  const t0 = Date.now();
  await page.locator(`tr[data-run="${liveRun}"]`).waitFor({ timeout: 15000 });
  report.live_update_ms = Date.now() - t0;
  report.live_no_reload = await page.evaluate(() => window.__noReload === true);
  report.live_region = await page.locator("#live").innerText();
  await shot(page, "console-runs-live");

  // --- navigation: Threads and Agents are entries of their own ---
  report.nav = await page.locator("nav.sidenav a").allInnerTexts();
  await page.locator("nav.sidenav").getByRole("link", { name: "Threads", exact: true }).click();
  await page.getByRole("heading", { name: "Threads" }).waitFor();
  await page.locator(`tr[data-thread="${THREAD}"]`).waitFor();
  report.threads = { rows: await page.locator("table[aria-label='Threads'] tbody tr").count(),
                     row: await page.locator(`tr[data-thread="${THREAD}"]`).innerText(),
                     current: await page.locator("nav.sidenav a[aria-current='page']").innerText() };
  await shot(page, "console-threads");
  await page.goto(`${U}/console/w/${WS}/runs`);
  await page.locator(`tr[data-run="${RUN}"]`).waitFor();

  // --- the trace of the identify run ---
  await page.locator(`tr[data-run="${RUN}"] a`).click();
  await page.getByRole("heading", { name: "Run trace" }).waitFor();
  await page.locator(".toolcall").first().waitFor();
  const trace = await text(page);
  report.trace = {
    tool_call: trace.includes("identify") && trace.includes("DEUTDEFF"),
    tool_status: await page.locator(".toolcall .badge").first().innerText(),
    model_turns: await page.locator(".tl-turn").count(),
    api_calls: await page.locator(".tl-request").count(),
    cost_text: await page.locator(".stats >> text=Cost").locator("..").innerText(),
    tool_cost_text: await page.locator(".tc-head").first().innerText(),
    tokens_text: await page.locator(".stats >> text=Tokens").locator("..").innerText(),
    has_raw_json: await page.locator("details.raw summary", { hasText: "Raw JSON" }).count(),
    agent_text: await page.locator("dl.meta >> text=Agent").locator("xpath=following-sibling::dd[1]").innerText(),
    state_badges: await page.locator(".page-head .badge, .stats .badge").count(),
    first_entry: await page.locator(".timeline > li").first().innerText(),
    model_input: await page.locator("details.model-input[open] .mi-msg").count(),
    model_input_user: await page.locator("details.model-input[open] .mi-user").first().innerText(),
    history_badge: await page.locator("details.model-input .history-badge").first().innerText(),
  };
  await shot(page, "console-trace");

  // --- the state changes of a run that asked a question ---
  await page.goto(`${U}/console/w/${WS}/runs/${process.env.ASK_RUN_ID}`);
  await page.locator(".tl-state").first().waitFor();
  report.ask_states = await page.locator(".tl-state", { hasText: "State changed" }).locator(".badge").allInnerTexts();
  await shot(page, "console-trace-states");
  await page.goto(`${U}/console/w/${WS}/runs/${process.env.TOOL_RUN_ID}`);
  await page.locator(".attempts li").first().waitFor();
  report.tool_attempts = await page.locator(".attempts li").count();
  report.tool_attempts_text = await page.locator(".attempts").innerText();
  await shot(page, "console-trace-attempts");
  await page.goBack();
  await page.goBack();
  await page.getByRole("heading", { name: "Run trace" }).waitFor();

  // --- the conversation of its thread ---
  await page.getByRole("link", { name: THREAD }).click();
  await page.getByRole("heading", { name: "Conversation" }).waitFor();
  await page.locator(".msg-assistant").first().waitFor();
  report.thread = { sub: await page.locator(".page-head p").innerText(),
                    user: await page.locator(".msg-user .msg-text").first().innerText(),
                    assistant: await page.locator(".msg-assistant .msg-text").first().innerText() };
  await shot(page, "console-thread");

  // --- ledger: chart, grant ---
  await page.getByRole("link", { name: "Ledger" }).click();
  await page.getByRole("heading", { name: "Ledger" }).waitFor();
  const before = await page.getByTestId("balance").innerText();
  report.ledger = { balance_before: before, chart: await page.locator("svg.chart-svg path.line").count(),
                    rows: await page.locator("table[aria-label='Ledger entries'] tbody tr").count() };
  await page.getByLabel("Amount (credits)").fill("25");
  await page.getByRole("button", { name: "Grant credits" }).click();
  await page.locator("main").getByText(/Granted 25 credits/).waitFor();
  report.ledger.balance_after = await page.getByTestId("balance").innerText();
  report.ledger.y_ticks = await page.locator("svg.chart-svg text.axis[x='56']").allTextContents();
  report.ledger.x_labels = await page.locator("svg.chart-svg text.axis[y='210']").allTextContents();
  await shot(page, "console-ledger");

  // --- request log with a filter ---
  await v1("POST", "/v1/identify", { identifier: "NOT-A-BIC!" });
  await page.getByRole("link", { name: "Request log" }).click();
  await page.getByRole("heading", { name: "Request log" }).waitFor();
  await page.locator("table[aria-label='Requests'] tbody tr").first().waitFor();
  report.requests = { all: await page.locator("table[aria-label='Requests'] tbody tr").count() };
  await page.getByLabel("Status code").fill("400");
  await page.getByLabel("Status code").press("Enter");
  await page.waitForURL(/status=400/);
  // The request log is written in batches (HEDDLE_REQUEST_LOG_FLUSH_SECONDS, 0.5 s): the 400 sent
  // just before may land a moment after the page asked, so Refresh as a person would (for up to
  // about 30 s: on a busy CI machine the batch has come after the 6 s this waited before).
  for (let i = 0; i < 60 && !(await page.locator("table[aria-label='Requests'] tbody tr").count()); i++) {
    await page.waitForTimeout(500);
    await page.getByRole("button", { name: "Refresh" }).click();
  }
  await page.locator("table[aria-label='Requests'] tbody tr").first().waitFor();
  report.requests.statuses_4xx = await page.locator("table[aria-label='Requests'] tbody tr td:nth-child(2)").allInnerTexts();
  await shot(page, "console-requests");
  // At 1440 px the table fits its card: the request id whole, a path on one line, the placeholder visible.
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.getByRole("button", { name: "Clear" }).click();
  await page.waitForURL((u) => !u.search.includes("status"));
  await page.locator("table[aria-label='Requests'] tbody tr").nth(2).waitFor();
  report.requests.layout = await page.evaluate(() => {
    const wrap = document.querySelector(".table-wrap"), table = wrap.querySelector("table");
    const rows = [...table.querySelectorAll("tbody tr")];
    const input = document.querySelector("#r-status");
    const probe = document.createElement("span");
    probe.style.font = getComputedStyle(input).font; probe.textContent = input.placeholder;
    document.body.append(probe);
    const placeholderWidth = probe.getBoundingClientRect().width; probe.remove();
    return {
      table_width: table.scrollWidth, wrap_width: wrap.clientWidth,
      id_cut: rows.filter((r) => { const c = r.lastElementChild; return c.scrollWidth > c.clientWidth + 1; }).length,
      max_row_height: Math.max(...rows.map((r) => r.getBoundingClientRect().height)),
      placeholder_fits: placeholderWidth < input.clientWidth - 16,
    };
  });
  await shot(page, "console-requests-1440");
  await page.setViewportSize({ width: 1280, height: 860 });

  // --- Identify playground: a result card, then a readable error ---
  await page.getByRole("link", { name: "Identify" }).click();
  await page.getByLabel("Identifier").fill("DEUTDEFF");
  await page.getByRole("button", { name: "Identify", exact: true }).click();
  await page.locator(".result-card").waitFor();
  report.identify = { card: await page.locator(".result-card").innerText() };
  await shot(page, "console-identify");
  await page.getByLabel("Identifier").fill("DEUTDE");
  await page.getByRole("button", { name: "Identify", exact: true }).click();
  await page.locator(".alert-error").waitFor();
  report.identify.error = await page.locator(".alert-error").innerText();
  await shot(page, "console-identify-error");

  // --- settings: save, and a refused value in words ---
  await page.getByRole("link", { name: "Settings" }).click();
  await page.getByRole("heading", { name: "Settings" }).waitFor();
  await page.getByLabel("Allowed origins").fill("https://app.example.com");
  await page.getByLabel("Retention (days)").fill("30");
  await page.getByRole("button", { name: "Save settings" }).click();
  await page.locator("main").getByText(/^Saved:/).waitFor();
  report.settings = { saved: await page.locator(".alert-success").innerText(),
                      limit_hint: await page.locator("#" + (await page.getByLabel("Rate limit per key").getAttribute("aria-describedby"))).innerText(),
                      limit_placeholder: await page.getByLabel("Rate limit per key").getAttribute("placeholder") };
  await page.getByLabel("Allowed origins").fill("https://*.example.com");
  await page.getByRole("button", { name: "Save settings" }).click();
  await page.locator(".alert-error").waitFor();
  report.settings.refused = await page.locator(".alert-error").innerText();
  await shot(page, "console-settings");
  await page.reload();
  await page.getByLabel("Allowed origins").waitFor();
  report.settings.origins_after_reload = await page.getByLabel("Allowed origins").inputValue();
  report.settings.retention_after_reload = await page.getByLabel("Retention (days)").inputValue();

  // --- API keys: the secret once, it works, revoke ---
  await page.getByRole("link", { name: "API keys" }).click();
  await page.getByRole("button", { name: "Create key" }).click();
  await page.getByTestId("secret").waitFor();
  const secret = await page.getByTestId("secret").innerText();
  const keyId = (await page.locator(".secret-once strong").innerText()).match(/key_[A-Za-z0-9_]+/)[0];
  report.keys = { secret_prefix: secret.slice(0, 8), copy_button: await page.getByRole("button", { name: "Copy secret" }).count() };
  const works = await fetch(U + "/v1/workspace", { headers: { Authorization: `Bearer ${secret}` } });
  report.keys.new_key_status = works.status;
  await shot(page, "console-keys-created");
  await page.reload();
  await page.locator(`tr[data-key="${keyId}"]`).waitFor();
  report.keys.secret_after_reload = await page.getByTestId("secret").count();
  report.keys.secret_in_page = (await page.content()).includes(secret);
  await page.getByRole("button", { name: `Revoke key ${keyId}` }).click();
  await page.getByRole("button", { name: `Revoke ${keyId}` }).click();
  await page.locator(`tr[data-key="${keyId}"] >> text=revoked`).waitFor();
  const revoked = await fetch(U + "/v1/workspace", { headers: { Authorization: `Bearer ${secret}` } });
  report.keys.revoked_key_status = revoked.status;
  await shot(page, "console-keys");

  // --- agents: create from YAML, edit as a new version, history ---
  await page.locator("nav.sidenav").getByRole("link", { name: "Agents", exact: true }).click();
  await page.getByRole("heading", { name: "Agents", level: 1 }).waitFor();
  await page.locator("table[aria-label='Agents']").waitFor();
  report.agents_nav_current = await page.locator("nav.sidenav a[aria-current='page']").innerText();
  await shot(page, "console-agents");
  // The CLI's agent (made from YAML): its file shows as YAML, its parameters in words.
  await page.getByRole("link", { name: "Payments helper" }).click();
  await page.getByRole("heading", { name: "Payments helper" }).waitFor();
  report.yaml_agent = { editor: await page.getByLabel("Agent file (YAML)").inputValue(),
                        tools: await page.locator("table[aria-label='Tools']").innerText() };
  // A YAML file with a mistake: the error is said once.
  await page.getByLabel("Agent file (YAML)").fill(report.yaml_agent.editor.replace("builtin: identify", "builtin: identfy"));
  await page.getByRole("button", { name: "Save new version" }).click();
  await page.locator(".alert-error").waitFor();
  report.yaml_agent.error = await page.locator(".alert-error").innerText();
  await shot(page, "console-agent-yaml");
  await page.locator("nav.sidenav").getByRole("link", { name: "Agents", exact: true }).click();
  await page.getByLabel("Agent file (YAML)").fill("name: Console agent\nmodel_class: scripted\ninstructions: First words.\ntools:\n  - builtin: identify\n");
  await page.getByRole("button", { name: "Create agent" }).click();
  await page.getByRole("heading", { name: "Console agent" }).waitFor();
  report.agent = { created_sub: await page.locator(".page-head p").innerText() };
  const editor = page.getByLabel("Agent file (YAML)");
  report.agent.editor_yaml = await editor.inputValue();
  await editor.fill((await editor.inputValue()).replace("First words.", "Second words."));
  await page.getByRole("button", { name: "Save new version" }).click();
  await page.locator("main").getByText(/Saved as version 2/).waitFor();
  report.agent.after_edit_sub = await page.locator(".page-head p").innerText();
  report.agent.versions = await page.locator(".versions li").count();
  report.agent.instructions = await page.locator(".pre-wrap").innerText();
  await page.getByRole("button", { name: "Show version 1" }).click();
  await page.getByRole("heading", { name: "Version 1" }).waitFor();
  report.agent.v1 = await page.locator("pre.code").first().innerText();
  // A broken agent file is refused in words.
  await editor.fill("{ not json");
  await page.getByRole("button", { name: "Save new version" }).click();
  report.agent.parse_error = await page.locator(".field-error").innerText();
  await editor.fill("name: Console agent\nmodel_class: no_such_class\ninstructions: x\n");
  await page.getByRole("button", { name: "Save new version" }).click();
  await page.locator(".alert-error").waitFor();
  report.agent.server_error = await page.locator(".alert-error").innerText();
  await shot(page, "console-agent");

  // --- connections ---
  await page.getByRole("link", { name: "Settings" }).click();
  await page.getByRole("link", { name: "Connections" }).click();
  await page.getByLabel("Name").fill("payments");
  await page.getByLabel("Base URL").fill("http://127.0.0.1:9");
  await page.getByLabel(/Development/).check();
  await page.getByRole("button", { name: "Create connection" }).click();
  await page.locator("main").getByText("Connection payments created.").waitFor();
  await page.locator("table[aria-label='Connections'] tbody tr", { hasText: "payments" }).waitFor();
  // An MCP server: the kind relabels the URL field.
  await page.getByLabel("Name").fill("billing");
  await page.getByLabel("Kind").selectOption("mcp");
  await page.getByLabel("MCP endpoint URL").fill("http://127.0.0.1:9/mcp");
  await page.getByRole("button", { name: "Create connection" }).click();
  await page.locator("main").getByText("Connection billing created.").waitFor();
  report.mcp_connection_row = await page.locator("table[aria-label='Connections'] tbody tr", { hasText: "billing" }).innerText();
  report.connections = await page.locator("table[aria-label='Connections'] tbody tr").count();
  await shot(page, "console-connections");

  // --- an API failure shows words, not JSON: an unknown run ---
  await page.goto(`${U}/console/w/${WS}/runs/00000000-0000-0000-0000-000000000000`);
  await page.locator(".alert-error").waitFor();
  report.unknown_run_error = await page.locator(".alert-error").innerText();
  await shot(page, "console-error");

  // --- keyboard and landmarks ---
  await page.goto(`${U}/console/w/${WS}/runs`);
  await page.locator("tbody tr").first().waitFor();
  await page.waitForTimeout(200);
  // A new page moves focus to its heading; from the top of the document, Tab reaches the skip link.
  const focusedAfterNav = await page.evaluate(() => document.activeElement?.id);
  await page.evaluate(() => { document.body.tabIndex = -1; document.body.focus(); });
  await page.keyboard.press("Tab");
  report.a11y = {
    focus_after_nav: focusedAfterNav,
    first_tab: await page.evaluate(() => document.activeElement?.textContent),
    landmarks: await page.evaluate(() => ["header", "nav", "main"].map((s) => document.querySelectorAll(s).length)),
    live_region: await page.locator("[aria-live='polite']").count(),
  };
  await page.setViewportSize({ width: 420, height: 860 });
  await shot(page, "console-runs-narrow");
  await page.setViewportSize({ width: 1280, height: 860 });

  // --- sign out ---
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByRole("heading", { name: "You are not signed in" }).waitFor();
  report.signed_out_again = true;
});
