// The official `openai` client's Conversations API against svc (SPEC 12.2), run by
// t/66-conversations.t with SVC_BASE (http://127.0.0.1:PORT/api/v1) and SVC_TOKEN (a
// user's bearer token). Prints one JSON line per check, {"ok", "name", "diag"}, then
// {"end": true}.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.env.SVC_BASE, apiKey: process.env.SVC_TOKEN });

function out(o) {
  process.stdout.write(JSON.stringify(o) + "\n");
}
function ok(cond, name, diag) {
  out({ ok: !!cond, name, diag: cond ? undefined : String(diag ?? "") });
}
function is(got, want, name) {
  const g = JSON.stringify(got), w = JSON.stringify(want);
  ok(g === w, name, `got ${g}, want ${w}`);
}
async function step(name, fn) {
  try {
    await fn();
  } catch (e) {
    ok(false, `${name}: no exception`, e && e.stack ? e.stack : e);
  }
}
async function status(p) {
  try {
    await p;
    return 200;
  } catch (e) {
    return e.status ?? String(e);
  }
}

await step("conversations", async () => {
  const conv = await client.conversations.create({
    metadata: { app: "node" },
    items: [{ type: "message", role: "user", content: "first words" }],
  });
  ok(/^conv_[0-9a-f]{32}$/.test(conv.id), "create: a conv_ id", conv.id);
  is(conv.object, "conversation", "create: object");
  is(conv.metadata, { app: "node" }, "create: metadata");
  ok(Number.isInteger(conv.created_at), "create: created_at", conv.created_at);

  const got = await client.conversations.retrieve(conv.id);
  is(got, conv, "retrieve: the same conversation");
  const upd = await client.conversations.update(conv.id, { metadata: { app: "node", v: "2" } });
  is(upd.metadata, { app: "node", v: "2" }, "update: metadata");

  const added = await client.conversations.items.create(conv.id, {
    items: [
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "noted" }] },
      { type: "message", role: "user", content: [{ type: "input_text", text: "second words" }] },
    ],
  });
  is(added.data.map((i) => i.role), ["assistant", "user"], "items.create: the two items");

  const all = [];
  for await (const item of client.conversations.items.list(conv.id, { limit: 1, order: "asc" }))
    all.push(item);
  is(all.map((i) => i.content[0].text), ["first words", "noted", "second words"],
     "items.list: every item through the client's paging");
  const one = await client.conversations.items.retrieve(all[1].id, { conversation_id: conv.id });
  is(one, all[1], "items.retrieve: the same item");

  // a Responses turn continuing the conversation sees what it holds
  const r = await client.responses.create({ model: "echo-1", conversation: conv.id, input: "go on" });
  ok(/given 3 earlier messages/.test(r.output_text), "responses: continues the conversation", r.output_text);
  const after = await client.conversations.items.list(conv.id);
  is(after.data.length, 5, "items.list: the turn's input and answer are items");
  is(after.data[0].role, "assistant", "items.list: newest first");
  ok(after.data[0].content[0].text === r.output_text, "the newest item is the answer", after.data[0].content[0].text);

  const del = await client.conversations.items.delete(all[1].id, { conversation_id: conv.id });
  is(del.id, conv.id, "items.delete: answers the conversation");
  is(await status(client.conversations.items.retrieve(all[1].id, { conversation_id: conv.id })), 404,
     "items.delete: then 404");
  const r2 = await client.responses.create({ model: "echo-1", conversation: conv.id, input: "again" });
  ok(/given 4 earlier messages/.test(r2.output_text), "the deleted item left the context", r2.output_text);

  is(await status(client.conversations.create({ metadata: { ["k".repeat(65)]: "v" } })), 422,
     "create: a key over 64 characters is 422");
  is(await status(client.conversations.items.create(conv.id, { items: [{ type: "message", role: "nobody", content: "x" }] })),
     422, "items.create: a malformed item is 422");

  const gone = await client.conversations.delete(conv.id);
  is(gone, { id: conv.id, object: "conversation.deleted", deleted: true }, "delete: deleted");
  is(await status(client.conversations.retrieve(conv.id)), 404, "delete: then 404");
});
out({ end: true });
