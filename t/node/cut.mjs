// A streamed chat through the official `openai` client whose worker is killed mid-stream
// (t/16-stream-cut.t). Streams SVC_PROMPT in session SVC_SID from SVC_BASE
// (http://127.0.0.1:PORT/api/v1); prints {"ready": true} after three content deltas (the
// .t then kills the worker), then one line: {"threw": bool, "error": "...", "text": "..."}.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.env.SVC_BASE, apiKey: "sk-not-checked", maxRetries: 0 });
let text = "";
let deltas = 0;
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
try {
  const stream = await client.chat.completions.create({
    model: "echo-1",
    stream: true,
    messages: [{ role: "user", content: process.env.SVC_PROMPT }],
    session_id: process.env.SVC_SID,
  });
  for await (const chunk of stream) {
    const d = chunk.choices[0]?.delta?.content;
    if (!d) continue;
    text += d;
    if (++deltas === 3) out({ ready: true });
  }
  out({ threw: false, text });
} catch (e) {
  out({ threw: true, error: `${e?.constructor?.name}: ${e?.message ?? e}`, text });
}
