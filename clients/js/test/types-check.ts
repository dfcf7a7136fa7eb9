// Compiled by `tsc --noEmit` in the test: the declared API and the generated schema agree.
import { Heddle, type Run, type IdentifyResult, NotFoundError } from "../src/index.js";

async function example(): Promise<string | undefined> {
  const client = new Heddle({ baseUrl: "http://127.0.0.1:8080", apiKey: "sk_live_x", subject: "web:alice" });
  const found: IdentifyResult = await client.identify({ identifier: "DEUTDEFF" });
  const handle = await client.loom.send({ agent: "agent_x", content: "hello" });
  const run: Run = await handle.wait({ until: ["closed", "failed"] });
  if (run.pending?.type === "input") return run.pending.question ?? undefined;
  const err = new NotFoundError();
  return `${found.result} ${run.state} ${run.latest_message?.content} ${err.code}`;
}
void example;
