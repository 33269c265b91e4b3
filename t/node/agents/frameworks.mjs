// Agent frameworks driven against svc unchanged (SPEC 15), run by t/69-frameworks.t with
// SVC_BASE (svc with the echo model: http://127.0.0.1:PORT/api/v1) and SVC_BASE_OA (svc
// whose `openai` model is t/lib/FakeOpenAI.pm, which the .t scripts and checks). Prints
// one JSON line per check, {"ok", "name", "diag"}, lines {"note": ...} the .t reads, then
// {"end": true}. Which part runs: argv[2] (agents, langgraph, aisdk, mastra; all by default).
import OpenAI from "openai";
import { z } from "zod";

const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const ok = (cond, name, diag) =>
  out({ ok: !!cond, name, diag: cond ? undefined : typeof diag === "string" ? diag : JSON.stringify(diag) });
const is = (got, want, name) => ok(got === want, name, `got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
const BASE = process.env.SVC_BASE, BASE_OA = process.env.SVC_BASE_OA, KEY = "sk-none";
const which = process.argv[2] || "all";
const Weather = z.object({ city: z.string(), sky: z.string() });
const get = async (path) => (await fetch(`${BASE}${path}`)).json();
const sessions = async () => (await get("/chat/sessions?limit=500")).sessions;

async function part(name, fn) {
  if (which !== "all" && which !== name) return;
  const t0 = Date.now();
  try {
    await fn();
  } catch (e) {
    ok(false, `${name}: no exception`, e && e.stack ? e.stack : String(e));
  }
  out({ note: "time", part: name, ms: Date.now() - t0 });
}

await part("agents", async () => {
  const { Agent, run, tool, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled, OpenAIConversationsSession } =
    await import("@openai/agents");
  setTracingDisabled(true);
  const client = new OpenAI({ baseURL: BASE, apiKey: KEY });
  setDefaultOpenAIClient(client);
  setOpenAIAPI("responses");
  const calls = [];
  const getWeather = tool({
    name: "get_weather", description: "The weather in a city", parameters: z.object({ city: z.string() }),
    execute: async ({ city }) => { calls.push(city); return `sunny in ${city}`; },
  });
  const agent = new Agent({ name: "helper", instructions: "Be brief.", model: "echo-1", tools: [getWeather] });
  const r1 = await run(agent, '/tool get_weather {"city":"Paris"}');
  is(calls.join(), "Paris", "agents: the tool ran with the model's arguments");
  is(r1.finalOutput, "Echo: tool get_weather returned sunny in Paris", "agents: the tool result reached the model");
  const s1 = await run(agent, "hello there", { stream: true });
  let deltas = "";
  for await (const ev of s1) if (ev.type === "raw_model_stream_event" && ev.data.type === "output_text_delta") deltas += ev.data.delta;
  await s1.completed;
  ok(/^Echo: hello there/.test(s1.finalOutput), "agents: streamed answer", s1.finalOutput);
  is(deltas, s1.finalOutput, "agents: the deltas make the answer");
  const s2 = await run(agent, '/tool get_weather {"city":"Lima"}', { stream: true });
  for await (const _ of s2);
  await s2.completed;
  is(s2.finalOutput, "Echo: tool get_weather returned sunny in Lima", "agents: a streamed tool turn");
  const empty = s2.newItems.filter((i) => i.type === "message_output_item" && !i.content);
  is(empty.length, 0, "agents: no empty message before the streamed call");
  const typed = new Agent({ name: "typed", model: "echo-1", outputType: Weather });
  const r2 = await run(typed, "Oslo weather");
  is(r2.finalOutput.city, "Oslo weather", "agents: outputType parsed (the first string quotes the input)");
  is(r2.finalOutput.sky, "", "agents: outputType's other string filled");
  const a = await run(agent, "first turn");
  const b = await run(agent, "second turn", { previousResponseId: a.lastResponseId });
  ok(/1 earlier messages|2 earlier messages/.test(b.finalOutput), "agents: previousResponseId continues", b.finalOutput);
  const { OpenAIResponsesModel } = await import("@openai/agents");
  const oaModel = new OpenAIResponsesModel(new OpenAI({ baseURL: BASE_OA, apiKey: KEY }), "fake-1");
  const r3 = await run(new Agent({ name: "typed", model: oaModel, outputType: Weather }), "format please");
  is(r3.finalOutput && r3.finalOutput.sky, "scripted", "agents openai: outputType parsed from the model server's answer");
  const session = new OpenAIConversationsSession({ client });
  await run(agent, "remember: blue", { session });
  const c = await run(agent, "what did I say?", { session });
  ok(/2 earlier messages/.test(c.finalOutput), "agents: a Conversations session holds the turns", c.finalOutput);
  const items = await session.getItems();
  is(items.length, 4, "agents: the conversation has four items");
});

await part("langgraph", async () => {
  const { createReactAgent } = await import("@langchain/langgraph/prebuilt");
  const { ChatOpenAI } = await import("@langchain/openai");
  const { tool } = await import("@langchain/core/tools");
  const weather = tool(async ({ city }) => `sunny in ${city}`, {
    name: "get_weather", description: "The weather in a city", schema: z.object({ city: z.string() }),
  });
  for (const [label, base] of [["echo", BASE], ["openai", BASE_OA]]) {
    const llm = new ChatOpenAI({ model: "echo-1", apiKey: KEY, configuration: { baseURL: base }, maxRetries: 0 });
    const agent = createReactAgent({ llm, tools: [weather], responseFormat: Weather });
    const before = label === "echo" ? (await sessions()).length : 0;
    const res = await agent.invoke({ messages: [{ role: "user", content: '/tool get_weather {"city":"Bern"}' }] });
    const texts = res.messages.map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)));
    ok(texts.some((t) => t.includes("sunny in Bern")), `langgraph ${label}: the tool ran`, texts);
    ok(res.structuredResponse && typeof res.structuredResponse.city === "string",
      `langgraph ${label}: responseFormat parsed`, res.structuredResponse);
    if (label === "echo") {
      is(texts.at(-1), "Echo: tool get_weather returned sunny in Bern", "langgraph echo: the answer after the tool result");
      const after = (await sessions()).length;
      out({ note: "langgraph_sessions", count: after - before });
    } else {
      out({ note: "langgraph_structured", value: res.structuredResponse });
    }
  }
});

await part("aisdk", async () => {
  const { generateText, streamText, tool, Output, stepCountIs } = await import("ai");
  const { createOpenAI } = await import("@ai-sdk/openai");
  const openai = createOpenAI({ baseURL: BASE, apiKey: KEY });
  const tools = { get_weather: tool({ inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => `sunny in ${city}` }) };
  for (const [label, model] of [["responses", openai("echo-1")], ["chat", openai.chat("echo-1")]]) {
    const g = await generateText({ model, prompt: '/tool get_weather {"city":"Rome"}', tools, stopWhen: stepCountIs(3), maxRetries: 0 });
    is(g.text, "Echo: tool get_weather returned sunny in Rome", `aisdk ${label}: generateText with a tool`);
    const st = streamText({ model, prompt: "stream me", maxRetries: 0 });
    let text = "";
    for await (const d of st.textStream) text += d;
    ok(/^Echo: stream me/.test(text), `aisdk ${label}: streamText`, text);
    const o = await generateText({ model, prompt: "Bern", output: Output.object({ schema: Weather }), maxRetries: 0 });
    is(o.output && o.output.city, "Bern", `aisdk ${label}: Output.object parsed`);
    // multi-turn: the first answer goes back in the messages (by reference on the Responses path)
    const t1 = await generateText({ model, prompt: "turn one", maxRetries: 0 });
    const messages = [{ role: "user", content: "turn one" }, ...t1.response.messages, { role: "user", content: "turn two" }];
    const t2 = await generateText({ model, messages, maxRetries: 0 });
    ok(/^Echo: turn two \(I was given 2 earlier messages/.test(t2.text), `aisdk ${label}: multi-turn history reached the model`, t2.text);
    const sid = (r) => r.response.headers && r.response.headers["x-session-id"];
    ok(sid(t1) && sid(t2) === sid(t1), `aisdk ${label}: the second turn continued the first's session`, [sid(t1), sid(t2)]);
    if (label === "responses") {
      const items = await get(`/responses/${t2.response.id}/input_items?order=asc`);
      ok(items.data.some((i) => i.type === "item_reference"), "aisdk responses: the earlier answer went by item_reference", items.data);
    }
  }
  // against the openai provider: the format reaches the model server (FakeOpenAI answers it)
  const oa = createOpenAI({ baseURL: BASE_OA, apiKey: KEY });
  const fo = await generateText({ model: oa("echo-1"), prompt: "format please", output: Output.object({ schema: Weather }), maxRetries: 0 });
  is(fo.output && fo.output.sky, "scripted", "aisdk openai: Output.object parsed from the model server's answer");
});

await part("mastra", async () => {
  const { Agent } = await import("@mastra/core/agent");
  const { createOpenAI } = await import("@ai-sdk/openai");
  const openai = createOpenAI({ baseURL: BASE, apiKey: KEY });
  const agent = new Agent({ name: "m", instructions: "Be brief.", model: openai.chat("echo-1") });
  const r = await agent.generate("hello mastra");
  ok(/^Echo: hello mastra/.test(r.text), "mastra: generate", r.text);
  const s = await agent.generate("Quito", { structuredOutput: { schema: Weather } });
  is(s.object && s.object.city, "Quito", "mastra: structuredOutput parsed");
});

out({ end: true });
