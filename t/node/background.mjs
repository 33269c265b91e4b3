// Background responses with the official `openai` client (SPEC 12.3), run by
// t/68-responses-background.t with SVC_BASE and SVC_TOKEN. One JSON line per check, then
// {"end": true}.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.env.SVC_BASE, apiKey: process.env.SVC_TOKEN });
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const ok = (cond, name, diag) => out({ ok: !!cond, name, diag: cond ? undefined : String(diag ?? "") });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

try {
  const r = await client.responses.create({ model: "echo-1", input: "in the background", background: true });
  ok(r.status === "queued" || r.status === "in_progress", "create: queued or in_progress", r.status);
  let got = r;
  for (let i = 0; i < 100 && (got.status === "queued" || got.status === "in_progress"); i++) {
    await sleep(100);
    got = await client.responses.retrieve(r.id);
  }
  ok(got.status === "completed", "retrieve: polled to completed", got.status);
  ok(/^Echo: in the background/.test(got.output_text), "retrieve: the answer", got.output_text);
  ok(got.usage && got.usage.total_tokens > 0, "retrieve: usage", JSON.stringify(got.usage));

  const slow = await client.responses.create({ model: "echo-1", input: "/slow 3000 a b c d e", background: true });
  const c = await client.responses.cancel(slow.id);
  ok(c.status === "cancelled", "cancel: cancelled", c.status);
  const again = await client.responses.retrieve(slow.id);
  ok(again.status === "cancelled", "retrieve after cancel: cancelled", again.status);
} catch (e) {
  ok(false, "no exception", e && e.stack ? e.stack : e);
}
out({ end: true });
