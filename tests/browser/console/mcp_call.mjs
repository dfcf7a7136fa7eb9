// An MCP tool call in the console: the run's trace shows its name, kind, arguments, result,
// approval and credits like any other call, and the agent page shows the agent's mcp: entry.
import { main, shot, watch } from "../browser.mjs";

const U = process.env.HEDDLE_URL, WS = process.env.WS;

await main(async (browser, report) => {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 860 } })).newPage();
  watch(page, report);
  await page.goto(U + process.env.LOGIN_PATH);
  await page.getByRole("button", { name: /sign in/i }).click();
  await page.waitForURL(/\/console\/?$/);

  await page.goto(`${U}/console/w/${WS}/runs/${process.env.RUN_ID}`);
  const call = page.getByLabel("Tool call send_transfer");
  await call.waitFor();
  report.call = {
    head: await call.locator(".tc-head").innerText(),
    kind: await call.locator(".tc-kind").innerText(),
    text: await call.innerText(),
  };
  await shot(page, "console-mcp-call");

  await page.goto(`${U}/console/w/${WS}/agents/${process.env.AGENT_ID}`);
  const tools = page.getByRole("table", { name: "Tools" });
  await tools.waitFor();
  report.agent_tools = await tools.innerText();
  await shot(page, "console-mcp-agent");
});
