// Branches with the official `openai` client (SPEC 12.3), run by t/67-responses-branch.t
// with SVC_BASE (http://127.0.0.1:PORT/api/v1) and SVC_TOKEN. Prints one JSON line per
// check, {"ok", "name", "diag"}, then {"end": true, "branch", "main"} with the session ids.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.env.SVC_BASE, apiKey: process.env.SVC_TOKEN });
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const ok = (cond, name, diag) => out({ ok: !!cond, name, diag: cond ? undefined : String(diag ?? "") });
const is = (got, want, name) => ok(got === want, name, `got ${got}, want ${want}`);
const ids = {};

try {
  const a = await client.responses.create({ model: "echo-1", input: "turn one" });
  is(a.conversation, null, "conversation is null unless the request named one (SPEC 15)");
  const b = await client.responses.create({ model: "echo-1", input: "turn two", previous_response_id: a.id });
  is(b.session_id, a.session_id, "the newest response continues in place");
  const c = await client.responses.create({ model: "echo-1", input: "turn three", previous_response_id: b.id });
  like(c.output_text, /4 earlier messages/, "the main line has 4 messages before turn three");
  const x = await client.responses.create({ model: "echo-1", input: "other two", previous_response_id: a.id });
  ok(x.session_id !== a.session_id, "an older response forks a new session", x.session_id);
  ok(/2 earlier messages/.test(x.output_text), "the branch holds turn one only", x.output_text);
  is(x.previous_response_id, a.id, "previous_response_id echoed on the branch");
  const y = await client.responses.create({ model: "echo-1", input: "other three", previous_response_id: x.id });
  is(y.session_id, x.session_id, "the branch's newest response continues the branch");
  ok(/4 earlier messages/.test(y.output_text), "the branch grew by one turn", y.output_text);
  const d = await client.responses.create({ model: "echo-1", input: "turn four", previous_response_id: c.id });
  is(d.session_id, a.session_id, "the main line is untouched and continues in place");
  ok(/6 earlier messages/.test(d.output_text), "the main line has its 6 messages", d.output_text);
  ids.branch = x.session_id;
  ids.main = a.session_id;
} catch (e) {
  ok(false, "no exception", e && e.stack ? e.stack : e);
}
function like(s, re, name) {
  ok(re.test(s), name, s);
}
out({ end: true, ...ids });
