// A misbehaving MCP server over stdio for t/66-mcp.t: newline-delimited JSON-RPC by hand.
// Tools: ok (answers its arguments), slow (sleeps `seconds`), crash (exits at once),
// garbage (writes a line that is not JSON), error (a JSON-RPC error), pid (its process id).
// With argv[2] "no-init" it exits before answering initialize; each start is appended to
// the file named by argv[3] when given. It never exits on its own when its input closes (a
// timer keeps it alive), so only svc can end it.
import fs from 'node:fs';
import readline from 'node:readline';

const mode = process.argv[2] || '';
if (process.argv[3]) fs.appendFileSync(process.argv[3], `${process.pid}\n`);
setInterval(() => {}, 1 << 30);
const send = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const tools = ['ok', 'slow', 'crash', 'garbage', 'error', 'pid'].map((name) => ({
    name, description: `misbehaves: ${name}`,
    inputSchema: { type: 'object', properties: { seconds: { type: 'number' } } },
}));
const text = (t) => ({ content: [{ type: 'text', text: t }] });

readline.createInterface({ input: process.stdin }).on('line', (line) => {
    const m = JSON.parse(line);
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
    case 'error': return send({ jsonrpc: '2.0', id: m.id, error: { code: -32000, message: 'broken on purpose' } });
    default: return send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no such method' } });
    }
});
