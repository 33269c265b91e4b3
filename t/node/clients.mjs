// Stock OpenAI client libraries against svc, used the way their READMEs show: the official
// `openai` client, the Vercel AI SDK (default openai(...) = Responses API, and
// openai.chat(...)), and LangChain's ChatOpenAI; each also as an agent with a client-side
// tool (SPEC 12.1). Run by t/60-clients.t with SVC_BASE set to http://127.0.0.1:PORT/api/v1
// (echo model) and SVC_BASE_OA to an svc whose `openai` model is t/lib/FakeOpenAI.pm (the
// LangChain agent: the model server calls the tool). Prints one JSON line per check:
//   {"ok": true|false, "name": "...", "diag": "..."}
// and {"archived": "<client>", "session_id": "<id>"} for each archived-session attempt (the
// .t counts that session's requests in the server log: one, not three), then {"end": true}.
import OpenAI from "openai";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, streamText, tool, stepCountIs } from "ai";
import { ChatOpenAI } from "@langchain/openai";
import { tool as lcTool } from "@langchain/core/tools";
import { HumanMessage } from "@langchain/core/messages";
import { z } from "zod";

const BASE = process.env.SVC_BASE;
const BASE_OA = process.env.SVC_BASE_OA;
const KEY = "sk-not-checked";
const run = Math.random().toString(16).slice(2, 10);

function out(o) {
  process.stdout.write(JSON.stringify(o) + "\n");
}
function ok(cond, name, diag) {
  out({ ok: !!cond, name, diag: cond ? undefined : String(diag ?? "") });
}
function is(got, want, name) {
  ok(got === want, name, `got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}
function like(got, re, name) {
  ok(typeof got === "string" && re.test(got), name, `got ${JSON.stringify(got)}, want ${re}`);
}
// The echo model says how many earlier messages it was given: the second turn of a
// session sees the first (user + assistant = 2).
const EARLIER2 = /I was given 2 earlier messages/;
const EARLIER0 = /I was given 0 earlier messages/;

async function step(name, fn) {
  try {
    await fn();
  } catch (e) {
    ok(false, `${name}: no exception`, e && e.stack ? e.stack : e);
  }
}

async function archive(sid) {
  // the session API lives next to the OpenAI routes: /api/v1/chat/sessions/...
  const r = await fetch(`${BASE}/chat/sessions/${sid}/archive`, { method: "POST" });
  return r.status;
}

// ---------------- openai ----------------
async function openaiClient() {
  const client = new OpenAI({ baseURL: BASE, apiKey: KEY });

  await step("openai models", async () => {
    const list = await client.models.list();
    const ids = list.data.map((m) => m.id);
    ok(ids.includes("echo-1"), "openai: models.list has the configured model", ids.join(","));
    is(list.data[0].object, "model", "openai: model object");
    const m = await client.models.retrieve("echo-1");
    is(m.id, "echo-1", "openai: models.retrieve");
  });

  await step("openai chat, session_id in the body", async () => {
    const sid = `oa-body-${run}`;
    const a = await client.chat.completions.create({
      model: "gpt-4o-mini",
      messages: [{ role: "user", content: "first" }],
      session_id: sid,
    });
    like(a.choices[0].message.content, EARLIER0, "openai: first turn");
    is(a.model, "echo-1", "openai: model says which model answered");
    const b = await client.chat.completions.create({
      model: "echo-1",
      messages: [{ role: "user", content: "second" }],
      session_id: sid,
    });
    like(b.choices[0].message.content, EARLIER2, "openai: session_id: second turn sees the first");
    ok(b.usage && b.usage.total_tokens > 0, "openai: usage", JSON.stringify(b.usage));
  });

  await step("openai chat streaming, metadata.session_id", async () => {
    const sid = `oa-meta-${run}`;
    for (const [i, want] of [[1, EARLIER0], [2, EARLIER2]]) {
      const stream = await client.chat.completions.create({
        model: "echo-1",
        messages: [{ role: "user", content: `turn ${i}` }],
        metadata: { session_id: sid },
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = "", usage = null, toolCalls = 0;
      for await (const chunk of stream) {
        const d = chunk.choices[0]?.delta;
        if (d?.content) text += d.content;
        if (d?.tool_calls) toolCalls++;
        if (chunk.usage) usage = chunk.usage;
      }
      like(text, want, `openai: stream, metadata.session_id, turn ${i}`);
      ok(usage && usage.total_tokens > 0, `openai: stream usage, turn ${i}`, JSON.stringify(usage));
    }
  });

  await step("openai chat, X-Session-Id header", async () => {
    const sid = `oa-hdr-${run}`;
    const opts = { headers: { "X-Session-Id": sid } };
    await client.chat.completions.create({ model: "echo-1", messages: [{ role: "user", content: "one" }] }, opts);
    const b = await client.chat.completions.create({ model: "echo-1", messages: [{ role: "user", content: "two" }] }, opts);
    like(b.choices[0].message.content, EARLIER2, "openai: X-Session-Id: second turn sees the first");
    is(b.session_id, sid, "openai: the answer names the session");
  });

  await step("openai responses: conversation and previous_response_id", async () => {
    const sid = `oa-conv-${run}`;
    const a = await client.responses.create({ model: "echo-1", input: "hello", conversation: sid });
    like(a.output_text, EARLIER0, "openai: responses first turn");
    is(a.status, "completed", "openai: responses status");
    ok(a.usage && a.usage.total_tokens > 0, "openai: responses usage", JSON.stringify(a.usage));
    const b = await client.responses.create({ model: "echo-1", input: "again", conversation: { id: sid } });
    like(b.output_text, EARLIER2, "openai: conversation: second turn sees the first");
    const c = await client.responses.create({ model: "echo-1", input: "third", previous_response_id: b.id });
    like(c.output_text, /I was given 4 earlier messages/, "openai: previous_response_id continues the session");
    is(c.previous_response_id, b.id, "openai: previous_response_id echoed");
    const got = await client.responses.retrieve(b.id);
    is(got.id, b.id, "openai: responses.retrieve");
    like(got.output_text ?? got.output[0].content[0].text, EARLIER2, "openai: retrieved text");
  });

  await step("openai responses streaming", async () => {
    const sid = `oa-rstream-${run}`;
    const first = await client.responses.create({ model: "echo-1", input: "one", conversation: sid });
    const stream = await client.responses.create({
      model: "echo-1",
      input: [{ role: "user", content: [{ type: "input_text", text: "two" }] }],
      previous_response_id: first.id,
      stream: true,
    });
    const types = [];
    let text = "", done = null;
    for await (const ev of stream) {
      types.push(ev.type);
      if (ev.type === "response.output_text.delta") text += ev.delta;
      if (ev.type === "response.completed") done = ev.response;
    }
    like(text, EARLIER2, "openai: responses stream text (second turn sees the first)");
    is(types[0], "response.created", "openai: stream starts with response.created");
    is(types[types.length - 1], "response.completed", "openai: stream ends with response.completed");
    ok(done && done.usage && done.usage.output_tokens > 0, "openai: response.completed carries usage", JSON.stringify(done?.usage));
  });

  await step("openai tool-using echo turn is plain text", async () => {
    const sid = `oa-tool-${run}`;
    const a = await client.chat.completions.create({
      model: "echo-1",
      messages: [{ role: "user", content: "/tool clock {}" }],
      session_id: sid,
    });
    const m = a.choices[0].message;
    ok(!m.tool_calls || m.tool_calls.length === 0, "openai: no tool_calls to answer", JSON.stringify(m.tool_calls));
    is(a.choices[0].finish_reason, "stop", "openai: finish_reason stop");
    like(m.content, /Tool clock returned/, "openai: the tool's result in the text");
    const stream = await client.chat.completions.create({
      model: "echo-1",
      messages: [{ role: "user", content: "/tool clock {}" }],
      session_id: sid,
      stream: true,
    });
    let text = "", toolCalls = 0;
    for await (const chunk of stream) {
      const d = chunk.choices[0]?.delta;
      if (d?.content) text += d.content;
      if (d?.tool_calls) toolCalls++;
    }
    is(toolCalls, 0, "openai: stream: no delta.tool_calls");
    like(text, /Tool clock returned/, "openai: stream: tool result as text");
    const r = await client.responses.create({ model: "echo-1", input: "/tool clock {}", conversation: sid });
    ok(r.output.every((o) => o.type === "message"), "openai: responses: no function_call items",
      JSON.stringify(r.output.map((o) => o.type)));
    like(r.output_text, /Tool clock returned/, "openai: responses: tool result as text");
  });

  await step("openai archived fails at once", async () => {
    const sid = `oa-arch-${run}`;
    await client.chat.completions.create({ model: "echo-1", messages: [{ role: "user", content: "x" }], session_id: sid });
    is(await archive(sid), 200, "openai: archived");
    let err = null;
    try {
      await client.chat.completions.create({ model: "echo-1", messages: [{ role: "user", content: "y" }], session_id: sid });
    } catch (e) {
      err = e;
    }
    is(err?.status, 403, "openai: archived session: 403");
    is(err?.code, "session_archived", "openai: code session_archived");
    out({ archived: "openai", session_id: sid });
  });
}

// ---------------- AI SDK ----------------
async function aiSdk() {
  const openai = createOpenAI({ baseURL: BASE, apiKey: KEY });

  await step("ai sdk responses (default openai())", async () => {
    const sid = `ai-conv-${run}`;
    const a = await generateText({
      model: openai("gpt-4o-mini"),
      prompt: "hello",
      providerOptions: { openai: { conversation: sid } },
    });
    like(a.text, EARLIER0, "ai: openai() first turn");
    is(a.response.modelId, "echo-1", "ai: response names the model that answered");
    ok(a.usage.totalTokens > 0, "ai: usage", JSON.stringify(a.usage));
    const b = await generateText({
      model: openai("echo-1"),
      prompt: "again",
      providerOptions: { openai: { conversation: sid } },
    });
    like(b.text, EARLIER2, "ai: conversation: second turn sees the first");
    const rid = b.providerMetadata?.openai?.responseId ?? b.response.id;
    const c = await generateText({
      model: openai("echo-1"),
      prompt: "third",
      providerOptions: { openai: { previousResponseId: rid } },
    });
    like(c.text, /I was given 4 earlier messages/, "ai: previousResponseId continues the session");
  });

  await step("ai sdk responses streaming", async () => {
    const sid = `ai-rstream-${run}`;
    await generateText({ model: openai("echo-1"), prompt: "one", providerOptions: { openai: { conversation: sid } } });
    const s = streamText({
      model: openai("echo-1"),
      prompt: "two",
      providerOptions: { openai: { conversation: sid } },
      onError: () => {},
    });
    let text = "";
    for await (const t of s.textStream) text += t;
    like(text, EARLIER2, "ai: streamText via responses, second turn sees the first");
    const u = await s.usage;
    ok(u.totalTokens > 0, "ai: stream usage", JSON.stringify(u));
  });

  await step("ai sdk chat (openai.chat), X-Session-Id", async () => {
    const sid = `ai-chat-${run}`;
    const headers = { "X-Session-Id": sid };
    const a = await generateText({ model: openai.chat("echo-1"), prompt: "one", headers });
    like(a.text, EARLIER0, "ai: openai.chat first turn");
    const s = streamText({ model: openai.chat("echo-1"), prompt: "two", headers, onError: () => {} });
    let text = "";
    for await (const t of s.textStream) text += t;
    like(text, EARLIER2, "ai: openai.chat stream: second turn sees the first");
  });

  await step("ai sdk tool-using echo turn is plain text", async () => {
    const sid = `ai-tool-${run}`;
    const a = await generateText({ model: openai.chat("echo-1"), prompt: "/tool clock {}", headers: { "X-Session-Id": sid } });
    is(a.toolCalls.length, 0, "ai: chat: no tool calls to run");
    like(a.text, /Tool clock returned/, "ai: chat: tool result as text");
    const s = streamText({ model: openai.chat("echo-1"), prompt: "/tool clock {}", headers: { "X-Session-Id": sid }, onError: () => {} });
    let text = "";
    for await (const t of s.textStream) text += t;
    is((await s.toolCalls).length, 0, "ai: chat stream: no tool calls");
    like(text, /Tool clock returned/, "ai: chat stream: tool result as text");
    const r = await generateText({ model: openai("echo-1"), prompt: "/tool clock {}", providerOptions: { openai: { conversation: sid } } });
    is(r.toolCalls.length, 0, "ai: responses: no tool calls");
    like(r.text, /Tool clock returned/, "ai: responses: tool result as text");
  });

  await step("ai sdk archived fails at once", async () => {
    for (const [kind, model] of [["ai-chat", openai.chat("echo-1")], ["ai-responses", openai("echo-1")]]) {
      const sid = `${kind}-arch-${run}`;
      await generateText({ model: openai.chat("echo-1"), prompt: "x", headers: { "X-Session-Id": sid } });
      is(await archive(sid), 200, `${kind}: archived`);
      let err = null;
      try {
        await generateText({
          model,
          prompt: "y",
          headers: { "X-Session-Id": sid },
          providerOptions: { openai: { conversation: sid } },
        });
      } catch (e) {
        err = e;
      }
      // generateText wraps the last error; RetryError carries lastError
      const last = err?.lastError ?? err;
      is(last?.statusCode, 403, `${kind}: archived session: 403`);
      is(last?.isRetryable, false, `${kind}: not retryable`);
      out({ archived: kind, session_id: sid });
    }
  });
}

// ---------------- LangChain ----------------
async function langchain() {
  const mk = (sid, extra = {}) =>
    new ChatOpenAI({
      model: "echo-1",
      apiKey: KEY,
      configuration: { baseURL: BASE },
      modelKwargs: { session_id: sid },
      ...extra,
    });

  await step("langchain invoke, session_id through modelKwargs", async () => {
    const sid = `lc-${run}`;
    const m = mk(sid);
    const a = await m.invoke("hello");
    like(a.content, EARLIER0, "langchain: first turn");
    const b = await m.invoke("again");
    like(b.content, EARLIER2, "langchain: second turn sees the first");
    ok(b.usage_metadata && b.usage_metadata.total_tokens > 0, "langchain: usage", JSON.stringify(b.usage_metadata));
  });

  await step("langchain stream", async () => {
    const sid = `lc-stream-${run}`;
    const m = mk(sid);
    await m.invoke("one");
    let text = "";
    for await (const chunk of await m.stream("two")) text += chunk.content;
    like(text, EARLIER2, "langchain: stream: second turn sees the first");
  });

  await step("langchain tool-using echo turn is plain text", async () => {
    const m = mk(`lc-tool-${run}`);
    const a = await m.invoke("/tool clock {}");
    is((a.tool_calls ?? []).length, 0, "langchain: no tool calls to run");
    like(a.content, /Tool clock returned/, "langchain: tool result as text");
    let text = "", calls = 0;
    for await (const chunk of await m.stream("/tool clock {}")) {
      text += chunk.content;
      calls += (chunk.tool_call_chunks ?? []).length;
    }
    is(calls, 0, "langchain: stream: no tool call chunks");
    like(text, /Tool clock returned/, "langchain: stream: tool result as text");
  });

  await step("langchain archived fails at once", async () => {
    const sid = `lc-arch-${run}`;
    const m = mk(sid);
    await m.invoke("x");
    is(await archive(sid), 200, "langchain: archived");
    let err = null;
    try {
      await m.invoke("y");
    } catch (e) {
      err = e;
    }
    is(err?.status, 403, "langchain: archived session: 403");
    out({ archived: "langchain", session_id: sid });
  });
}

// ---------------- client-side tools (SPEC 12.1) ----------------
const WEATHER_PARAMS = {
  type: "object",
  properties: { city: { type: "string" } },
  required: ["city"],
  additionalProperties: false,
};

async function openaiTools() {
  const client = new OpenAI({ baseURL: BASE, apiKey: KEY, maxRetries: 0 });
  const tools = [{ type: "function", function: { name: "get_weather", description: "Weather of a city", parameters: WEATHER_PARAMS } }];

  await step("openai chat with a client tool", async () => {
    const sid = `oa-ctool-${run}`;
    const messages = [{ role: "user", content: '/tool get_weather {"city":"Paris"}' }];
    const a = await client.chat.completions.create({ model: "echo-1", messages, tools, tool_choice: "auto", session_id: sid });
    is(a.choices[0].finish_reason, "tool_calls", "openai tools: finish_reason tool_calls");
    const call = a.choices[0].message.tool_calls?.[0];
    is(call?.function?.name, "get_weather", "openai tools: the call names the client tool");
    is(JSON.parse(call?.function?.arguments ?? "{}").city, "Paris", "openai tools: its arguments");
    messages.push(a.choices[0].message, { role: "tool", tool_call_id: call.id, content: "sunny" });
    const b = await client.chat.completions.create({ model: "echo-1", messages, tools, session_id: sid });
    is(b.choices[0].message.content, "Echo: tool get_weather returned sunny", "openai tools: the answer from the result (whole history resent)");
    let err = null;
    try {
      await client.chat.completions.create({ model: "echo-1", messages, tools, session_id: sid });
    } catch (e) {
      err = e;
    }
    is(err?.status, 422, "openai tools: an answered call_id again: 422");
    is(err?.code, "invalid_field", "openai tools: invalid_field");
    err = null;
    try {
      await client.chat.completions.create({
        model: "echo-1", session_id: sid, messages: [{ role: "user", content: "x" }],
        tools: [{ type: "function", function: { name: "clock", parameters: WEATHER_PARAMS } }],
      });
    } catch (e) {
      err = e;
    }
    is(err?.status, 422, "openai tools: a name clashing with svc's clock: 422");
    is(err?.param, "tools", "openai tools: param tools");
  });

  await step("openai chat stream with a client tool", async () => {
    const sid = `oa-ctool-s-${run}`;
    const s = client.chat.completions.stream({
      model: "echo-1", session_id: sid, tools,
      messages: [{ role: "user", content: '/tool get_weather {"city":"Oslo"}' }],
    });
    const fin = await s.finalChatCompletion();
    is(fin.choices[0].finish_reason, "tool_calls", "openai tools stream: finish_reason tool_calls");
    const call = fin.choices[0].message.tool_calls?.[0];
    is(JSON.parse(call?.function?.arguments ?? "{}").city, "Oslo", "openai tools stream: the call assembled from delta.tool_calls");
    const s2 = client.chat.completions.stream({
      model: "echo-1", session_id: sid, tools,
      messages: [{ role: "tool", tool_call_id: call.id, content: "snow" }],
    });
    const fin2 = await s2.finalChatCompletion();
    is(fin2.choices[0].message.content, "Echo: tool get_weather returned snow", "openai tools stream: only the new tool message sent");
  });

  await step("openai responses with a client tool", async () => {
    const sid = `oa-ctool-r-${run}`;
    const rtools = [{ type: "function", name: "get_weather", description: "Weather of a city", parameters: WEATHER_PARAMS, strict: true }];
    const a = await client.responses.create({ model: "echo-1", input: '/tool get_weather {"city":"Rome"}', tools: rtools, conversation: sid });
    const fc = a.output.find((o) => o.type === "function_call");
    is(fc?.name, "get_weather", "openai tools responses: a function_call item");
    is(fc?.status, "completed", "openai tools responses: status completed");
    is(JSON.parse(fc?.arguments ?? "{}").city, "Rome", "openai tools responses: arguments");
    let err = null;
    try {
      await client.responses.create({ model: "echo-1", previous_response_id: a.id, tools: rtools,
        input: [{ type: "function_call_output", call_id: "call_unknown", output: "x" }] });
    } catch (e) {
      err = e;
    }
    is(err?.status, 422, "openai tools responses: unknown call_id: 422");
    const b = await client.responses.create({ model: "echo-1", previous_response_id: a.id, tools: rtools,
      input: [{ type: "function_call_output", call_id: fc.call_id, output: "warm" }] });
    is(b.output_text, "Echo: tool get_weather returned warm", "openai tools responses: the answer (previous_response_id)");
    const s = client.responses.stream({ model: "echo-1", input: '/tool get_weather {"city":"Lima"}', tools: rtools, conversation: sid });
    const fin = await s.finalResponse();
    const fc2 = fin.output.find((o) => o.type === "function_call");
    is(JSON.parse(fc2?.arguments ?? "{}").city, "Lima", "openai tools responses stream: the call");
    const c = await client.responses.create({ model: "echo-1", conversation: sid, tools: rtools,
      input: [{ type: "function_call_output", call_id: fc2.call_id, output: "dry" }] });
    is(c.output_text, "Echo: tool get_weather returned dry", "openai tools responses: the answer (conversation)");
  });
}

async function openaiResponsesExtras() {
  const client = new OpenAI({ baseURL: BASE, apiKey: KEY, maxRetries: 0 });
  await step("openai responses delete, input_items, store false, truncation", async () => {
    const sid = `oa-rx-${run}`;
    const a = await client.responses.create({ model: "echo-1", input: [{ role: "user", content: "one" }, { role: "user", content: "two" }], conversation: sid });
    const items = [];
    for await (const it of client.responses.inputItems.list(a.id, { order: "asc", limit: 1 })) items.push(it);
    is(items.length, 2, "openai: inputItems.list pages through every input item");
    is(items[1]?.content?.[0]?.text, "two", "openai: input items in order");
    await client.responses.delete(a.id);
    let err = null;
    try {
      await client.responses.retrieve(a.id);
    } catch (e) {
      err = e;
    }
    is(err?.status, 404, "openai: responses.delete: retrieve is 404 after");
    const b = await client.responses.create({ model: "echo-1", input: "three", conversation: sid });
    like(b.output_text, /I was given 3 earlier messages/, "openai: the session's messages stayed");
    const c = await client.responses.create({ model: "echo-1", input: "off the record", store: false });
    is(c.store, false, "openai: store false");
    err = null;
    try {
      await client.responses.retrieve(c.id);
    } catch (e) {
      err = e;
    }
    is(err?.status, 404, "openai: store false: nothing stored");
    err = null;
    try {
      for (let i = 0; i < 30; i++)
        await client.responses.create({ model: "echo-1", input: `more ${i}`, conversation: sid, truncation: "disabled" });
    } catch (e) {
      err = e;
    }
    is(err?.status, 400, "openai: truncation disabled past the window: 400");
    is(err?.code, "context_length_exceeded", "openai: context_length_exceeded");
  });
}

async function aiSdkTools() {
  const openai = createOpenAI({ baseURL: BASE, apiKey: KEY });
  let ran = 0;
  const tools = {
    get_weather: tool({
      description: "Weather of a city",
      inputSchema: z.object({ city: z.string() }),
      execute: async ({ city }) => {
        ran++;
        return `sunny in ${city}`;
      },
    }),
  };
  for (const [kind, model, opts] of [
    ["chat", openai.chat("echo-1"), { headers: { "X-Session-Id": `ai-ctool-c-${run}` } }],
    ["responses", openai("echo-1"), { providerOptions: { openai: { conversation: `ai-ctool-r-${run}` } } }],
  ]) {
    await step(`ai sdk ${kind} with a client tool`, async () => {
      ran = 0;
      const r = await generateText({
        model, tools, stopWhen: stepCountIs(3), maxRetries: 0,
        prompt: '/tool get_weather {"city":"Oslo"}', ...opts,
      });
      is(ran, 1, `ai tools ${kind}: the tool ran once, in the client`);
      is(r.steps.length, 2, `ai tools ${kind}: two steps`);
      is(r.steps[0].toolCalls[0]?.toolName, "get_weather", `ai tools ${kind}: step 1 called the tool`);
      like(r.text, /^Echo: tool get_weather returned .*sunny in Oslo/, `ai tools ${kind}: step 2 answered from its result`);
      ran = 0;
      const st = streamText({
        model, tools, stopWhen: stepCountIs(3), maxRetries: 0, onError: () => {},
        prompt: '/tool get_weather {"city":"Lima"}', ...opts,
      });
      let text = "";
      for await (const t of st.textStream) text += t;
      is(ran, 1, `ai tools ${kind} stream: the tool ran once`);
      like(text, /^Echo: tool get_weather returned .*sunny in Lima/, `ai tools ${kind} stream: the answer from its result`);
    });
  }
}

async function langchainTools() {
  if (!BASE_OA) return;
  await step("langchain bindTools against the openai model", async () => {
    const weather = lcTool(async ({ city }) => `sunny in ${city}`, {
      name: "get_weather",
      description: "Weather of a city",
      schema: z.object({ city: z.string() }),
    });
    const m = new ChatOpenAI({
      model: "fake-1", apiKey: KEY, maxRetries: 0,
      configuration: { baseURL: BASE_OA },
      modelKwargs: { session_id: `lc-ctool-${run}` },
    }).bindTools([weather]);
    const msgs = [new HumanMessage('call tool get_weather {"city":"Bern"}')];
    const ai = await m.invoke(msgs);
    is(ai.tool_calls?.[0]?.name, "get_weather", "langchain tools: the model server's call reaches LangChain");
    is(ai.tool_calls?.[0]?.args?.city, "Bern", "langchain tools: its args");
    msgs.push(ai, await weather.invoke(ai.tool_calls[0]));
    const ans = await m.invoke(msgs);
    is(ans.content, "Tool get_weather said: sunny in Bern", "langchain tools: the model answers from the result");
  });
}

await openaiClient();
await aiSdk();
await langchain();
await openaiTools();
await openaiResponsesExtras();
await aiSdkTools();
await langchainTools();
out({ end: true });
