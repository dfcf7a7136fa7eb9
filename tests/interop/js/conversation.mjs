// A whole conversation through AG-UI's own client, @ag-ui/client's HttpAgent, against
// POST /v1/agui/{agent_id}: a plain reply, Heddle's identify tool, a question answered through
// `resume`, and a front-end tool answered with a tool message. Prints one JSON object.
// Usage: node conversation.mjs '{"url": ..., "headers": {...}}'
import { HttpAgent, buildResumeArray } from "@ag-ui/client";

const config = JSON.parse(process.argv[2]);
const agent = new HttpAgent({ url: config.url, headers: config.headers, threadId: "js-thread" });
const seen = [];
const subscriber = { onEvent: ({ event }) => { seen.push(event.type); } };
const WEATHER = {
  name: "show_weather", description: "Show the weather card in the page.",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};
let n = 0;
const say = (content) => agent.addMessage({ id: `u-${++n}`, role: "user", content });
const lastText = () => [...agent.messages].reverse().find((m) => m.role === "assistant" && m.content)?.content;
const out = { steps: [] };

say("hello");
await agent.runAgent({}, subscriber);
out.steps.push({ step: "plain", reply: lastText() });

say("Where does DEUTDEFF go?");
const tool = await agent.runAgent({}, subscriber);
const called = tool.newMessages.flatMap((m) => m.toolCalls || []).map((c) => c.function.name);
const results = tool.newMessages.filter((m) => m.role === "tool").map((m) => JSON.parse(m.content).status);
out.steps.push({ step: "tool", called, results, reply: lastText() });

say("ask: Which account?");
await agent.runAgent({}, subscriber);
const interrupts = agent.pendingInterrupts.map((i) => ({ id: i.id, reason: i.reason, message: i.message }));
const resume = buildResumeArray(agent.pendingInterrupts,
  Object.fromEntries(agent.pendingInterrupts.map((i) => [i.id, { status: "resolved", payload: "DE89370400440532013000" }])));
await agent.runAgent({ resume }, subscriber);
out.steps.push({ step: "ask", interrupts, after: agent.pendingInterrupts.length, reply: lastText() });

say('call: show_weather {"city": "Lagos"}');
const fe = await agent.runAgent({ tools: [WEATHER] }, subscriber);
const calls = fe.newMessages.flatMap((m) => m.toolCalls || []);
for (const call of calls) {
  agent.addMessage({ id: `t-${call.id}`, role: "tool", toolCallId: call.id, content: "shown: 31C, sunny" });
}
await agent.runAgent({ tools: [WEATHER] }, subscriber);
out.steps.push({ step: "frontend", calls: calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)]),
  reply: lastText() });

out.events = seen;
out.messages = agent.messages.length;
console.log(JSON.stringify(out));
