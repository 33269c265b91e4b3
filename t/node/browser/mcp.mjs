// The dashboard's MCP parts in chromium (started by t/66-mcp.t): the Status view lists the
// servers with their state, tools and errors, and a transcript marks each MCP call with
// its server. One JSON line per check, {"done": true} at the end.
//   node mcp.mjs --base URL --token T --sid SESSION --shots DIR
import { chromium } from 'playwright-core';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
    if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
    return acc;
}, []));
const check = (name, cond, diag) => {
    if (!cond) process.exitCode = 1;
    process.stdout.write(JSON.stringify({ ok: !!cond, name, diag: cond ? undefined : diag }) + '\n');
};
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--headless', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });
const page = await (await browser.newContext()).newPage();
page.setDefaultTimeout(30000);
const errors = [];
page.on('pageerror', (e) => errors.push(e.message));
await page.addInitScript((t) => sessionStorage.setItem('svc.token', t), args.token);

await page.goto(args.base + '/#/status');
const box = page.locator('#st-mcp');
await box.locator('table').waitFor();
const text = await box.textContent();
check('status: the MCP servers are listed', /files/.test(text) && /everything/.test(text) && /web/.test(text), text);
check('status: with their transport and state', /stdio/.test(text) && /streamable_http/.test(text) && /ready/.test(text), text);
check('status: a failed server says why', /failed/.test(text) && /cannot run \/nonexistent\/mcp-server/.test(text), text);
check('status: the tools as the model sees them', /files__read_file/.test(text), text);
await page.screenshot({ path: args.shots + '/dashboard-mcp-status.png', fullPage: true });

await page.goto(args.base + '/#/s/' + encodeURIComponent(args.sid));
const call = page.locator('.tool-call').first();
await call.waitFor();
check('transcript: the call names its MCP server', /MCP files/.test(await call.textContent()), await call.textContent());
check('transcript: so does its result', /MCP files/.test(await page.locator('.tool-result').first().textContent()));
await page.screenshot({ path: args.shots + '/dashboard-mcp-transcript.png', fullPage: true });
check('no page errors', errors.length === 0, errors.join('; '));
await browser.close();
process.stdout.write(JSON.stringify({ done: true }) + '\n');
