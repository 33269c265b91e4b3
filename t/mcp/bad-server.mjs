// A misbehaving MCP server over stdio for t/66-mcp.t: newline-delimited JSON-RPC by hand.
// Tools: ok (answers its arguments), slow (sleeps `seconds`), crash (exits at once),
// garbage (writes a line that is not JSON), error (a JSON-RPC error), pid (its process id),
// grow (adds the tool "extra" and sends notifications/tools/list_changed), ask (sends the
// client a ping and a sampling request, and answers with what came back).
// With argv[2] "no-init" it exits before answering initialize; each start is appended to
// the file named by argv[3] when given. It never exits on its own when its input closes (a
// timer keeps it alive), so only svc can end it.
import fs from 'node:fs';
import readline from 'node:readline';

const mode = process.argv[2] || '';
if (process.argv[3]) fs.appendFileSync(process.argv[3], `${process.pid}\n`);
setInterval(() => {}, 1 << 30);
const send = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const tools = ['ok', 'slow', 'crash', 'garbage', 'error', 'pid', 'grow', 'ask'].map((name) => ({
    name, description: `misbehaves: ${name}`,
    inputSchema: { type: 'object', properties: { seconds: { type: 'number' } } },
}));
const text = (t) => ({ content: [{ type: 'text', text: t }] });

const asked = new Map(); // our requests to the client: id -> what to do with its answer
readline.createInterface({ input: process.stdin }).on('line', (line) => {
    const m = JSON.parse(line);
    if (m.method === undefined && asked.has(m.id)) return asked.get(m.id)(m);
    if (m.id === undefined) return;
    if (m.method === 'initialize') {
        if (mode === 'no-init') process.exit(3);
        process.stderr.write('bad-server: initialize\n');
        return send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion,
            capabilities: { tools: {} }, serverInfo: { name: 'bad', version: '1' } } });
    }
    if (m.method === 'tools/list') return send({ jsonrpc: '2.0', id: m.id, result: { tools } });
    const { name, arguments: args } = m.params || {};
    switch (name) {
    case 'ok': return send({ jsonrpc: '2.0', id: m.id, result: text(JSON.stringify(args)) });
    case 'pid': return send({ jsonrpc: '2.0', id: m.id, result: text(String(process.pid)) });
    case 'slow': return setTimeout(() => send({ jsonrpc: '2.0', id: m.id, result: text('late') }),
        (args.seconds || 60) * 1000);
    case 'crash': return process.exit(9);
    case 'garbage': return process.stdout.write('this is not json\n');
    case 'grow':
        tools.push({ name: 'extra', description: 'added later', inputSchema: { type: 'object' } });
        send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
        return send({ jsonrpc: '2.0', id: m.id, result: text('grown') });
    case 'ask': {
        const seen = [];
        const done = (r) => { seen.push(r.error ? `error ${r.error.code}` : JSON.stringify(r.result));
            if (seen.length === 2) send({ jsonrpc: '2.0', id: m.id, result: text(seen.join('; ')) }); };
        asked.set('p1', done);
        asked.set('s1', done);
        send({ jsonrpc: '2.0', id: 'p1', method: 'ping' });
        return send({ jsonrpc: '2.0', id: 's1', method: 'sampling/createMessage', params: { messages: [] } });
    }
    case 'error': return send({ jsonrpc: '2.0', id: m.id, error: { code: -32000, message: 'broken on purpose' } });
    default: return send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no such method' } });
    }
});
