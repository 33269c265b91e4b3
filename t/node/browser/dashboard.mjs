// Drives Debian's chromium through the dashboard served by nginx (started by
// t/60-dashboard.t). Prints one JSON line per check ({"ok", "name", "diag"} or
// {"skip", "name"}), and {"done": true} at the end; the .t turns them into TAP.
//
//   node dashboard.mjs --base http://127.0.0.1:PORT --shots DIR [--root SESSION_ROOT] [--token TOKEN]
//                      [--mode upstream]   (the model is t/lib/FakeOpenAI.pm)
//                      [--mode prefix]     (BASE ends in the prefix, e.g. .../svc)
//                      [--mode users --user-token T --admin-token T]   (server.users: alice, root)
import { chromium } from 'playwright-core';
import { gunzipSync } from 'node:zlib';
import { mkdirSync, writeFileSync } from 'node:fs';
import { commonmarkConformance } from './commonmark.mjs';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
    if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
    return acc;
}, []));
const BASE = args.base;
const SHOTS = args.shots;
const TOKEN = args.token || '';
const ROOT = args.root || '';   // the session root, to lay out a session as Strands writes it
const TIMEOUT = 30000;

function out(o) {
    process.stdout.write(JSON.stringify(o) + '\n');
}
function check(name, cond, diag) {
    if (!cond) process.exitCode = 1;
    out({ ok: !!cond, name, diag: cond ? undefined : diag });
    return !!cond;
}
function skip(name, reason) {
    out({ skip: reason, name });
}

async function apiGet(path) {
    const headers = TOKEN ? { Authorization: 'Bearer ' + TOKEN } : {};
    const r = await fetch(BASE + path, { headers });
    return { status: r.status, json: await r.json().catch(() => null) };
}
async function apiPost(path, body) {
    const headers = { 'Content-Type': 'application/json' };
    if (TOKEN) headers.Authorization = 'Bearer ' + TOKEN;
    const r = await fetch(BASE + path, { method: 'POST', headers, body: JSON.stringify(body) });
    return { status: r.status, json: await r.json().catch(() => null) };
}

// Files of a .tar (ustar, pax headers skipped): Map name -> Buffer.
function untar(buf) {
    const files = new Map();
    let off = 0;
    let paxName = null;
    while (off + 512 <= buf.length) {
        const hdr = buf.subarray(off, off + 512);
        if (hdr.every((b) => b === 0)) break;
        const str = (a, b) => hdr.subarray(a, b).toString('utf8').replace(/\0.*$/s, '');
        let name = str(0, 100);
        const prefix = str(345, 500);
        if (prefix) name = prefix + '/' + name;
        const size = parseInt(str(124, 136).trim() || '0', 8);
        const type = String.fromCharCode(hdr[156] || 48);
        const data = buf.subarray(off + 512, off + 512 + size);
        if (type === 'x') {
            const m = /\d+ path=([^\n]*)\n/.exec(data.toString('utf8'));
            if (m) paxName = m[1];
        } else {
            if (paxName) name = paxName;
            paxName = null;
            if (type === '0' || type === '\0') files.set(name.replace(/^\.\//, ''), Buffer.from(data));
        }
        off += 512 + Math.ceil(size / 512) * 512;
    }
    return files;
}

// Click an export control; check the .tar.gz's manifest lists every session of `sids`.
async function checkExport(page, what, click, sids) {
    const respP = page.waitForResponse((r) => r.url().endsWith('/api/v1/chat/sessions/export'), { timeout: TIMEOUT });
    const dlP = page.waitForEvent('download', { timeout: TIMEOUT }).catch((e) => e);
    await click();
    const resp = await respP;
    if (resp.status() === 501) {
        skip(what + ': download has a manifest listing the session', 'export endpoint not built yet (501)');
        await page.locator('#toast', { hasText: 'Export failed' }).waitFor({ timeout: TIMEOUT });
        check(what + ': the 501 is shown in words', /cannot do that yet/.test(await page.textContent('#toast')),
            await page.textContent('#toast'));
        return;
    }
    check(what + ': export answered 200', resp.status() === 200, 'status ' + resp.status());
    const dl = await dlP;
    if (!check(what + ': a download started', dl && typeof dl.path === 'function', String(dl))) return;
    const name = dl.suggestedFilename();
    check(what + ': the file is a .tar.gz', /\.tar\.gz$/.test(name), name);
    const file = SHOTS + '/' + name;
    await dl.saveAs(file);
    let files;
    try {
        files = untar(gunzipSync(await import('node:fs').then((fs) => fs.readFileSync(file))));
    } catch (e) {
        check(what + ': the download is a gzipped tar', false, String(e));
        return;
    }
    const mpath = [...files.keys()].find((n) => /(^|\/)manifest\.json$/.test(n));
    if (!check(what + ': the bundle has manifest.json', mpath, [...files.keys()].join(', '))) return;
    let manifest;
    try {
        manifest = JSON.parse(files.get(mpath).toString('utf8'));
    } catch (e) {
        check(what + ': manifest.json is JSON', false, String(e));
        return;
    }
    check(what + ': manifest format svc-chat-export', manifest.format === 'svc-chat-export', JSON.stringify(manifest).slice(0, 300));
    const paths = (manifest.files || []).map((f) => f.path);
    for (const sid of sids) {
        check(what + ': manifest lists session ' + sid, paths.some((p) => p.includes(sid)), paths.join(', '));
    }
    check(what + ': session_count matches the selection', manifest.session_count === sids.length,
        'session_count ' + manifest.session_count);
}

const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--headless', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const pageErrors = [];
const external = [];
async function newPage(opts) {
    const ctx = await browser.newContext({ acceptDownloads: true, ...opts });
    const page = await ctx.newPage();
    page.setDefaultTimeout(TIMEOUT);
    page.on('pageerror', (e) => pageErrors.push(e.message));
    // console errors (a CSP violation, say); an HTTP error status the page handles is not one
    page.on('console', (m) => {
        if (m.type() === 'error' && !/Failed to load resource: the server responded with a status of/.test(m.text())) {
            pageErrors.push('console: ' + m.text());
        }
    });
    page.on('dialog', (d) => {
        pageErrors.push('a dialog opened: ' + d.message());
        d.dismiss().catch(() => {});
    });
    page.on('request', (r) => {
        if (!r.url().startsWith(BASE) && !r.url().startsWith('data:') && !r.url().startsWith('blob:')) external.push(r.url());
    });
    return { ctx, page };
}

// Wait for the assistant's answer after sending `text` in the open session view.
async function chat(page, text) {
    const before = await page.locator('#transcript > li.role-assistant').count();
    await page.fill('#chat-input', text);
    await page.press('#chat-input', 'Enter');
    return answered(page, before);
}

// Wait until the answer to the message just sent has streamed in and the page is idle.
async function answered(page, before) {
    await page.waitForFunction((n) => {
        const items = document.querySelectorAll('#transcript > li.role-assistant');
        return items.length > n && !document.querySelector('#transcript > li.streaming') &&
            document.getElementById('stop-btn').hidden &&
            document.getElementById('transcript').getAttribute('aria-busy') === 'false';
    }, before, { timeout: TIMEOUT });
    return (await page.locator('#transcript > li.role-assistant').last().textContent()) || '';
}

// Type `text` with the keyboard into whatever has the focus, and send it with Enter.
async function typeAndSend(page, text) {
    const before = await page.locator('#transcript > li.role-assistant').count();
    await page.keyboard.type(text);
    await page.keyboard.press('Enter');
    return answered(page, before);
}

// The message box, found as a screen reader finds it.
const messageBox = (page) => page.getByRole('textbox', { name: 'Message' });
const hasFocus = (loc) => loc.evaluate((e) => e === document.activeElement);

// Go back to the landing view with "New session" and wait until it is in place (an empty
// transcript, the message box usable). The click may only set location.hash; the view
// changes in the hashchange task that follows, so counting the transcript before then
// would count the previous session's answers.
async function newSession(page) {
    await page.getByRole('button', { name: 'New session' }).click();
    await page.waitForFunction(() => (location.hash === '#/' || location.hash === '') &&
        document.getElementById('transcript').childElementCount === 0 &&
        !document.getElementById('chat-input').disabled, null, { timeout: TIMEOUT });
}

// Controls a screen reader would meet without a name: Chromium's own accessibility tree
// (what assistive technology reads), every button, text box, check box, list box and link.
const NAMED_ROLES = new Set(['button', 'textbox', 'searchbox', 'checkbox', 'combobox', 'link', 'radio', 'menuitem', 'tab', 'switch']);
async function unnamedControls(page) {
    const cdp = await page.context().newCDPSession(page);
    const { nodes } = await cdp.send('Accessibility.getFullAXTree');
    await cdp.detach();
    return nodes.filter((n) => !n.ignored && NAMED_ROLES.has(n.role && n.role.value) &&
        !(n.name && String(n.name.value).trim())).map((n) => n.role.value + '#' + n.backendDOMNodeId);
}

// Rate, comment, branch, pin, tag, filter by tag, delete: as a person would, by role and name.
async function historyChecks(page) {
    await newSession(page);
    await typeAndSend(page, 'first turn of a history');
    await chat(page, 'second turn of a history');
    const sid = sidFrom(page.url());
    const transcript = page.getByRole('list', { name: 'Transcript' });
    const answer = transcript.getByRole('listitem').filter({ hasText: 'Echo: first turn of a history' });
    await answer.getByRole('button', { name: 'Good answer' }).click();
    await answer.getByRole('button', { name: 'Good answer', pressed: true }).waitFor();
    await answer.getByRole('textbox', { name: 'Comment on this answer' }).fill('short and right');
    await answer.getByRole('button', { name: 'Save comment' }).click();
    await page.locator('#toast', { hasText: 'Comment saved.' }).waitFor();
    const rows = (await apiGet('/api/v1/chat/sessions/' + sid + '/messages?limit=10')).json.messages;
    const rated = rows.find((m) => m.feedback);
    check('feedback: thumbs up with a comment is stored on that answer', rated && rated.role === 'assistant' &&
        rated.feedback.rating === 'up' && rated.feedback.comment === 'short and right' &&
        /Echo: first turn/.test(rated.content), JSON.stringify(rated));
    await page.reload();
    await answer.getByRole('button', { name: 'Good answer', pressed: true }).waitFor();
    await answer.getByRole('button', { name: 'Bad answer' }).click();
    await answer.getByRole('button', { name: 'Bad answer', pressed: true }).waitFor();
    check('feedback: shown after a reload, and changed to thumbs down', await answer.getByRole('button', { name: 'Good answer', pressed: false }).count() === 1);
    await page.screenshot({ path: SHOTS + '/dashboard-feedback.png' });
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.screenshot({ path: SHOTS + '/dashboard-feedback-dark.png' });
    await page.emulateMedia({ colorScheme: 'light' });

    // branch at the first answer: the branch opens at once and links back
    await answer.getByRole('button', { name: 'Branch from here' }).click();
    await page.waitForFunction((s) => /^#\/s\//.test(location.hash) && !location.hash.endsWith('/' + s), sid);
    const bsid = sidFrom(page.url());
    await page.getByRole('link', { name: sid }).waitFor();
    await page.waitForFunction(() => document.getElementById('transcript').getAttribute('aria-busy') === 'false');
    const bsum = (await apiGet('/api/v1/chat/sessions/' + bsid)).json;
    check('branch: a new session forked at that answer', bsum && bsum.forked_from && bsum.forked_from.session_id === sid &&
        await transcript.getByRole('listitem').count() === 2, JSON.stringify(bsum));
    check('branch: its messages end with the answer it was made from',
        /Echo: first turn/.test(await transcript.getByRole('listitem').last().textContent()));

    // pin: first in the list, in its own group
    await page.getByRole('button', { name: 'Pin', exact: true }).click();
    const pinned = page.getByRole('list', { name: 'Pinned sessions' });
    await pinned.locator('li[data-sid="' + bsid + '"]').waitFor();
    check('pin: the session is in the pinned group, before the others', await pinned.getByRole('listitem').count() === 1 &&
        await page.locator('#sessions > li[data-sid="' + bsid + '"]').count() === 0 &&
        (await apiGet('/api/v1/chat/sessions/' + bsid)).json.pinned === true);
    check('pin: the button says Unpin, pressed', await page.getByRole('button', { name: 'Unpin', pressed: true }).count() === 1);

    // tags: add two, remove one, filter the list by one
    for (const t of ['work', 'urgent']) {
        await page.getByRole('textbox', { name: 'New tag' }).fill(t);
        await page.getByRole('button', { name: 'Add tag' }).click();
        await page.getByRole('button', { name: 'Remove tag ' + t }).waitFor();
    }
    await page.getByRole('button', { name: 'Remove tag urgent' }).click();
    await page.getByRole('button', { name: 'Remove tag urgent' }).waitFor({ state: 'detached' });
    const tags = (await apiGet('/api/v1/chat/sessions/' + bsid)).json.tags;
    check('tags: added and removed', JSON.stringify(tags) === '["work"]', JSON.stringify(tags));
    await page.getByRole('searchbox', { name: 'Tag' }).fill('work');
    await page.waitForFunction(() => document.querySelectorAll('#list-pane li.row').length === 1);
    check('tags: the list filters by tag', await page.locator('#list-pane li.row').getAttribute('data-sid') === bsid);
    await page.screenshot({ path: SHOTS + '/dashboard-history.png' });
    await page.getByRole('searchbox', { name: 'Tag' }).fill('');
    await page.waitForFunction(() => document.querySelectorAll('#list-pane li.row').length > 1);

    // delete: the confirmation names the session; Cancel keeps it
    const title = bsum.title || bsid;
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    const dlg = page.getByRole('dialog', { name: 'Delete \u201C' + title + '\u201D?' });
    await dlg.waitFor();
    await dlg.getByRole('button', { name: 'Cancel' }).click();
    await dlg.waitFor({ state: 'hidden' });
    check('delete: Cancel keeps the session', (await apiGet('/api/v1/chat/sessions/' + bsid)).status === 200);
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await dlg.getByRole('button', { name: 'Delete session' }).click();
    await page.waitForFunction(() => location.hash === '#/');
    await page.locator('#list-pane li.row[data-sid="' + bsid + '"]').waitFor({ state: 'detached' });
    check('delete: the session is gone, the source stays', (await apiGet('/api/v1/chat/sessions/' + bsid)).status === 404 &&
        (await apiGet('/api/v1/chat/sessions/' + sid)).status === 200);
    check('history: every control has a name', (await unnamedControls(page)).length === 0, (await unnamedControls(page)).join(' '));
}

// server.users: the page says who is signed in, signs out, and shows admins the owners.
async function usersChecks() {
    const { page } = await newPage({ viewport: { width: 1280, height: 800 } });
    const signIn = async (token) => {
        await page.locator('#token-dialog[open]').waitFor();
        await page.getByRole('textbox', { name: 'Token' }).fill(token);
        await page.getByRole('button', { name: 'Continue' }).click();
    };
    await page.goto(BASE + '/');
    await signIn(args['user-token']);
    await page.getByText('Signed in as alice', { exact: true }).waitFor();
    check('users: the page says who is signed in', true);
    await newSession(page);
    await typeAndSend(page, 'a note of alice');
    const sid = sidFrom(page.url());
    check('users: no owner column for a user', await page.getByText(/owner alice/).count() === 0);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.locator('#token-dialog[open]').waitFor();
    check('users: sign-out forgets the token and asks again',
        await page.evaluate(() => sessionStorage.getItem('svc.token')) === null &&
        await page.locator('#token-error', { hasText: 'signed out' }).count() === 1 &&
        await page.locator('#list-pane li.row').count() === 0);
    await signIn(args['admin-token']);
    await page.getByText('Signed in as root (admin)', { exact: true }).waitFor();
    const row = page.locator('#list-pane li.row[data-sid="' + sid + '"]');
    await row.waitFor();
    check('users: an admin sees the owner of each session', /owner alice/.test(await row.textContent()), await row.textContent());
    await page.screenshot({ path: SHOTS + '/dashboard-users.png' });
    await page.setViewportSize({ width: 390, height: 844 });
    check('users: on a phone, who is signed in and Sign out stay on screen',
        await page.getByRole('button', { name: 'Sign out' }).evaluate((e) => e.getBoundingClientRect().right <= innerWidth) &&
        await page.getByText('Signed in as root (admin)').isVisible());
    await page.screenshot({ path: SHOTS + '/dashboard-users-phone.png' });
    check('users: every control has a name', (await unnamedControls(page)).length === 0, (await unnamedControls(page)).join(' '));
    check('users: no page errors', pageErrors.length === 0, pageErrors.join(' | '));
}

function sidFrom(url) {
    const m = /#\/s\/([^/?#]+)$/.exec(url);
    return m ? decodeURIComponent(m[1]) : null;
}

try {
    if (TOKEN) {
        // ---- with server.api_token: the page asks once, keeps it in session storage ----
        const { page } = await newPage({ viewport: { width: 1280, height: 800 } });
        await page.goto(BASE + '/');
        await page.locator('#token-dialog[open]').waitFor();
        check('token: the page asks for the token', await page.isVisible('#token-input'));
        await page.fill('#token-input', 'wrong-' + TOKEN);
        await page.press('#token-input', 'Enter');
        await page.locator('#token-error', { hasText: 'not accepted' }).waitFor();
        check('token: a wrong token is refused in words', await page.isVisible('#token-dialog[open]'));
        await page.fill('#token-input', TOKEN);
        await page.press('#token-input', 'Enter');
        await page.locator('#list-status', { hasText: 'No sessions match.' }).waitFor();
        check('token: the list loads with the token', !(await page.isVisible('#token-dialog[open]')));
        await newSession(page);
        const answer = await chat(page, 'hello with a token');
        check('token: chat works', /Echo: hello with a token/.test(answer), answer);
        const stored = await page.evaluate(() => sessionStorage.getItem('svc.token'));
        check('token: kept in session storage', stored === TOKEN);
        check('token: never in the address', !page.url().includes(TOKEN), page.url());
        await page.reload();
        await page.locator('#transcript > li.role-assistant').first().waitFor();
        check('token: not asked again after a reload', !(await page.isVisible('#token-dialog[open]')));
        check('token: no page errors', pageErrors.length === 0, pageErrors.join(' | '));
        out({ done: true });
        await browser.close();
        process.exit(0);
    }

    if (args.mode === 'users') {
        await usersChecks();
        out({ done: true });
        await browser.close();
        process.exit(process.exitCode || 0);
    }

    if (args.mode === 'prefix') {
        // ---- served under a prefix (svc.conf's two edited lines): every call stays under it ----
        const { page } = await newPage({ viewport: { width: 1280, height: 800 } });
        const api = [];
        page.on('request', (r) => {
            if (new URL(r.url()).pathname.includes('/api/')) api.push(new URL(r.url()).pathname);
        });
        await page.goto(BASE + '/');
        await page.locator('#list-status', { hasText: 'No sessions match.' }).waitFor();
        check('prefix: the session list loads', true);
        await page.goto(BASE + '/#/new');
        const answer = await chat(page, 'hello under a prefix');
        check('prefix: a message is answered', /Echo: hello under a prefix/.test(answer), answer);
        await page.goto(BASE + '/#/');
        await page.locator('#sessions li').first().waitFor();
        check('prefix: the new session is listed', (await page.locator('#sessions li').count()) === 1);
        const prefix = new URL(BASE).pathname.replace(/\/$/, '') + '/api/';
        check('prefix: every API call went under the prefix', api.length > 0 && api.every((p) => p.startsWith(prefix)),
            api.join(' '));
        check('prefix: nothing fetched from outside', external.length === 0, external.join(' '));
        check('prefix: no page errors', pageErrors.length === 0, pageErrors.join(' | '));
        out({ done: true });
        await browser.close();
        process.exit(0);
    }

    if (args.mode === 'upstream') {
        // ---- a model server that fails: the error is said in words, the session goes on ----
        const { page } = await newPage({ viewport: { width: 1280, height: 800 } });
        await page.goto(BASE + '/#/new');
        await page.fill('#chat-input', 'fail 500');
        await page.press('#chat-input', 'Enter');
        await page.locator('#chat-error', { hasText: 'model server' }).waitFor();
        const text = await page.textContent('#chat-error');
        check('upstream failure: said in words', /^The model server failed: /.test(text) && !/upstream_error/.test(text), text);
        const typed = await page.getByRole('textbox', { name: 'Message' }).inputValue();
        check('upstream failure: the typed text is back in the box', typed === 'fail 500', typed);
        await page.waitForFunction(() => document.getElementById('stop-btn').hidden);
        await page.locator('#s-meta .badge', { hasText: 'error' }).waitFor();
        check('upstream failure: the session shows its error status', true);
        const answer = await chat(page, 'hello after the failure');
        check('upstream failure: the next message is answered', /You said: hello after the failure/.test(answer), answer);
        check('upstream: no page errors', pageErrors.length === 0, pageErrors.join(' | '));
        out({ done: true });
        await browser.close();
        process.exit(0);
    }

    mkdirSync(SHOTS, { recursive: true });
    const { page } = await newPage({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
    await page.goto(BASE + '/');
    await page.locator('#list-status', { hasText: 'No sessions match.' }).waitFor();
    check('empty root: the list says so', true);

    // ---- the landing view: type at once, Enter starts a session; chat twice in it ----
    check('landing: the message box has the focus', await hasFocus(messageBox(page)));
    check('landing: the address names no session yet', sidFrom(page.url()) === null, page.url());
    let unnamed = await unnamedControls(page);
    check('landing: every control has an accessible name', unnamed.length === 0, unnamed.join(' '));
    await page.screenshot({ path: SHOTS + '/dashboard-landing.png' });
    let answer = await typeAndSend(page, 'Hello from the **browser** test');
    check('first answer streamed into the page', /Echo: Hello from the browser test \(I was given 0 earlier messages\.\)/.test(answer), answer);
    await page.waitForURL(/#\/s\//);
    const sid = sidFrom(page.url());
    check('the new session id is in the address', sid && /^sess-[0-9a-f]{16}$/.test(sid), page.url());
    check('markdown bold rendered as <strong>', await page.locator('#transcript li.role-user strong', { hasText: 'browser' }).count() > 0);
    const chatBodies = [];
    const onReq = (r) => {
        if (r.method() === 'POST' && r.url() === BASE + '/api/chat') chatBodies.push(JSON.parse(r.postData() || 'null'));
    };
    page.on('request', onReq);
    answer = await chat(page, 'And a second question');
    page.off('request', onReq);
    const cb = chatBodies[0] || {};
    check('the page sends only the newest input, with the session id',
        chatBodies.length === 1 && cb.session_id === sid && cb.stream === true && Array.isArray(cb.messages) &&
        cb.messages.length === 1 && cb.messages[0].content === 'And a second question', JSON.stringify(chatBodies));
    check('second answer mentions the restored context (2 earlier messages)', /I was given 2 earlier messages/.test(answer), answer);

    // ---- a tool call shows as a collapsible block ----
    answer = await chat(page, '/tool clock {}');
    check('tool answer shown', /Tool clock returned: \d{4}-/.test(answer), answer);
    const toolCall = page.locator('#transcript details.tool-call', { hasText: 'clock' }).last();
    check('tool call is a <details> block', await toolCall.count() === 1);
    check('tool result is a <details> block', await page.locator('#transcript details.tool-result').count() >= 1);
    check('tool blocks start collapsed', !(await toolCall.evaluate((d) => d.open)));
    await toolCall.locator('summary').focus();
    await page.keyboard.press('Enter');
    check('a tool block opens with the keyboard', await toolCall.evaluate((d) => d.open));

    // ---- chat in progress, then stop (disconnect cancels the run) ----
    await page.fill('#chat-input', '/slow 300 one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty');
    await page.press('#chat-input', 'Enter');
    await page.locator('#transcript > li.streaming', { hasText: 'one two' }).waitFor();
    check('stop button shown while streaming', await page.isVisible('#stop-btn'));
    await page.screenshot({ path: SHOTS + '/dashboard-chat.png' });
    await page.click('#stop-btn');
    await page.waitForFunction(() => document.getElementById('stop-btn').hidden);
    let s = null;
    for (let i = 0; i < 100; i++) {
        s = (await apiGet('/api/v1/chat/sessions/' + sid)).json;
        if (s && s.status !== 'running') break;
        await new Promise((r) => setTimeout(r, 100));
    }
    check('stop cancelled the run on the server', s && s.status === 'cancelled', JSON.stringify(s && s.status));
    await page.locator('#s-meta .badge', { hasText: 'cancelled' }).waitFor();
    check('the page shows the session as cancelled', true);
    const transcript = page.getByRole('list', { name: 'Transcript' });
    const stoppedLi = transcript.getByRole('listitem').filter({ hasText: 'Stopped: the run was cancelled' });
    await stoppedLi.waitFor();
    const stoppedText = await stoppedLi.textContent();
    check('stop: the part of the answer that had arrived is kept, marked as stopped',
        /one two/.test(stoppedText) && /kept on this page/.test(stoppedText), stoppedText);
    const before = await stoppedLi.evaluate((li) => li.previousElementSibling && li.previousElementSibling.textContent);
    check('stop: it stays after the message it answered', /\/slow 300 one two/.test(before || ''), before);

    // ---- reload: the transcript comes back from the messages endpoint ----
    await page.reload();
    await page.locator('#transcript > li.role-assistant', { hasText: 'I was given 2 earlier messages' }).waitFor();
    const userTexts = await page.locator('#transcript > li.role-user').allTextContents();
    check('after reload: both questions in the transcript', userTexts.some((t) => t.includes('Hello from the browser test')) &&
        userTexts.some((t) => t.includes('And a second question')), userTexts.join(' | '));
    // The token usage is fetched after the transcript is shown (loadTokens is not awaited):
    // wait until #s-tokens holds its answer, whatever it says, before reading it.
    await page.waitForFunction(() => document.getElementById('s-tokens').childElementCount > 0, null, { timeout: TIMEOUT });
    check('after reload: token usage shown', /Total \(all runs\)/.test(await page.textContent('#s-tokens')),
        await page.textContent('#s-tokens'));
    await page.screenshot({ path: SHOTS + '/dashboard-transcript.png' });

    // ---- a background run followed from another tab through the events stream ----
    const run = await apiPost('/api/chat/runs', { session_id: sid, messages: [{ role: 'user', content: '/slow 700 followed from afar by another tab of the browser' }] });
    check('background run started', run.status === 202, JSON.stringify(run));
    const { page: tab2 } = await newPage({ viewport: { width: 1000, height: 700 } });
    await tab2.goto(BASE + '/#/run/' + run.json.run_id);
    await tab2.locator('#transcript > li.streaming', { hasText: 'Echo:' }).waitFor();
    check('other tab: the run streams live', await tab2.isVisible('#live-run'));
    await tab2.locator(`#sessions li[data-sid="${sid}"] .badge.st-running`).waitFor();
    check('the list shows the session running', true);
    await tab2.locator('#transcript > li.role-assistant:not(.streaming)', { hasText: 'of the browser (I was given' }).waitFor();
    check('other tab: the finished answer is in the transcript', true);
    await tab2.locator(`#sessions li[data-sid="${sid}"] .badge.st-idle`).waitFor();
    check('the list row turns idle when the run ends', true);
    await tab2.close();

    // ---- search, list screenshot ----
    await page.goto(BASE + '/#/');
    await newSession(page);
    check('"New session": back to the landing view, the message box focused, no session named',
        await hasFocus(messageBox(page)) && sidFrom(page.url()) === null &&
        await page.getByRole('heading', { level: 1, name: 'New session' }).isVisible(), page.url());
    // keyboard only: type, then Tab to the Send button and press it
    await page.keyboard.type('Other topic entirely');
    const sendBtn = page.getByRole('button', { name: 'Send' });
    for (let i = 0; i < 5 && !(await hasFocus(sendBtn)); i++) await page.keyboard.press('Tab');
    check('keyboard: Tab reaches the Send button from the message box', await hasFocus(sendBtn));
    const before2 = await page.locator('#transcript > li.role-assistant').count();
    await page.keyboard.press('Enter');
    answer = await answered(page, before2);
    check('keyboard: Send pressed with the keyboard sends', /Echo: Other topic entirely/.test(answer), answer);
    const sid2 = sidFrom(page.url());
    answer = await chat(page, 'Here is **Markdown**, rendered by the page:\n\n1. a list item with `inline code`\n' +
        '2. a [link](https://example.com/docs) and <https://example.org>\n\n> a quote\n\n' +
        '```c\nint main(void) { return 0; }\n```\n\n| code | says |\n| --- | :-: |\n| `a_b` | yes |\n\n' +
        'snake_case_word and **bold**; window.__pwned=1 ... window.__pwned=2 stays as it is. That is all.');
    const md = await page.evaluate(() => {
        const last = [...document.querySelectorAll('#transcript > li.role-assistant')].pop();
        return {
            code: !!last.querySelector('pre.code > code[data-lang="c"]'),
            inline: last.querySelector('ol > li > code')?.textContent,
            links: [...last.querySelectorAll('a')].map((a) => a.getAttribute('href')),
            quote: !!last.querySelector('blockquote'),
            table: [...last.querySelectorAll('table td')].map((c) => c.textContent).join(','),
            strong: [...last.querySelectorAll('strong')].map((b) => b.textContent),
            text: last.textContent,
        };
    });
    check('markdown: snake_case_word keeps its underscores, **bold** is bold',
        md.text.includes('snake_case_word and bold;') && md.strong.includes('bold') && md.strong.length === 2, JSON.stringify(md));
    check('markdown: intraword __ is not emphasis', md.text.includes('window.__pwned=1 ... window.__pwned=2'), md.text);
    check('markdown: a table', md.table === 'a_b,yes', md.table);
    unnamed = await unnamedControls(page);
    check('session view: every control has an accessible name', unnamed.length === 0, unnamed.join(' '));
    {
        // the same transcript in the dark scheme, on a desktop
        const { page: dark, ctx } = await newPage({ viewport: { width: 1280, height: 800 }, colorScheme: 'dark' });
        await dark.goto(BASE + '/#/s/' + encodeURIComponent(sid2));
        await dark.getByRole('list', { name: 'Transcript' }).getByRole('listitem').filter({ hasText: 'snake_case_word' }).last().waitFor();
        const dbg = await dark.evaluate(() => getComputedStyle(document.body).backgroundColor);
        check('dark scheme on a desktop', dbg === 'rgb(17, 20, 24)', dbg);
        await dark.screenshot({ path: SHOTS + '/dashboard-markdown-dark.png' });
        await ctx.close();
    }
    check('markdown: fenced code block with its language', md.code);
    check('markdown: ordered list with inline code', md.inline === 'inline code', String(md.inline));
    check('markdown: links and autolinks', md.links.includes('https://example.com/docs') && md.links.includes('https://example.org/'), md.links.join(' '));
    check('markdown: block quote', md.quote);
    await page.screenshot({ path: SHOTS + '/dashboard-markdown.png' });
    // the spec's examples through the page's renderer (commonmark.mjs says which are left out)
    const cm = await commonmarkConformance(page);
    check(`markdown: CommonMark 0.31.2 examples pass (${cm.passed} of ${cm.run}; ${cm.excluded} left out by the page's rules)`,
        cm.run >= 550 && cm.passed === cm.run, JSON.stringify(cm.failures.slice(0, 3)));
    await page.goto(BASE + '/#/');
    await page.locator(`#sessions li[data-sid="${sid}"]`).waitFor();
    // sid2's row comes with a list reload the chats started and nothing awaited: wait for it,
    // or sid2 "detaching" below would prove nothing and the search checks would pass on the
    // list as it was before sid2 existed.
    await page.locator(`#sessions li[data-sid="${sid2}"]`).waitFor();
    await page.fill('#q', 'FROM THE BROWSER'); // the title is plain text: no Markdown markup
    await page.locator(`#sessions li[data-sid="${sid2}"]`).waitFor({ state: 'detached' });
    check('search finds the session by title (case-insensitive)', await page.locator(`#sessions li[data-sid="${sid}"]`).count() === 1);
    check('search hides the others', await page.locator('#sessions li').count() === 1);
    await page.fill('#q', 'no such title zzz');
    await page.locator('#list-status', { hasText: 'No sessions match.' }).waitFor();
    check('search with no match says so', await page.locator('#sessions li').count() === 0);
    await page.fill('#q', '');
    await page.locator(`#sessions li[data-sid="${sid2}"]`).waitFor();
    // keyboard: arrow keys move between rows, Enter opens one
    await page.locator('#sessions .row-link').first().focus();
    await page.keyboard.press('ArrowDown');
    const focused = await page.evaluate(() => document.activeElement && document.activeElement.dataset.sid);
    check('arrow key moves to the next row', focused === sid, String(focused));
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
    check('keyboard focus is visible', outline && outline !== 'none', outline);
    await page.screenshot({ path: SHOTS + '/dashboard-list.png' });
    await page.keyboard.press('Enter');
    await page.waitForURL(new RegExp('#/s/' + sid + '$'));
    check('Enter opens the focused session', true);

    // ---- rename in place ----
    await page.locator('#s-title', { hasText: 'Hello from the' }).waitFor();
    await page.click('#rename-btn');
    await page.fill('#rename-input', 'Renamed by the browser');
    await page.press('#rename-input', 'Enter');
    await page.locator('#s-title', { hasText: 'Renamed by the browser' }).waitFor();
    s = (await apiGet('/api/v1/chat/sessions/' + sid)).json;
    check('rename stored on the server', s && s.title === 'Renamed by the browser', JSON.stringify(s && s.title));
    await page.locator(`#sessions li[data-sid="${sid}"] .row-title`, { hasText: 'Renamed by the browser' }).waitFor();
    check('the list row shows the new title', true);

    // ---- export: this session, then a selection from the list ----
    await checkExport(page, 'export of this session', () => page.click('#export-btn'), [sid]);
    await page.locator(`#sessions li[data-sid="${sid}"] input.sel`).check();
    await page.locator(`#sessions li[data-sid="${sid2}"] input.sel`).check();
    check('selection count shown', /2 sessions selected/.test(await page.textContent('#selected-count')));
    await checkExport(page, 'export of a selection', () => page.click('#export-selected'), [sid, sid2]);

    // ---- archive hides it from the default list; the archived filter shows it ----
    await page.click('#archive-btn');
    await page.locator('#archive-btn', { hasText: 'Unarchive' }).waitFor();
    s = (await apiGet('/api/v1/chat/sessions/' + sid)).json;
    check('archive stored on the server', s && s.archived === true);
    await page.locator(`#sessions li[data-sid="${sid}"]`).waitFor({ state: 'detached' });
    check('archived session gone from the default list', await page.locator(`#sessions li[data-sid="${sid2}"]`).count() === 1);
    await page.fill('#chat-input', 'x').catch(() => {});
    check('chat box disabled on an archived session', await page.isDisabled('#chat-input'));
    await page.selectOption('#f-archived', 'archived');
    await page.locator(`#sessions li[data-sid="${sid}"]`).waitFor();
    check('archived filter shows it', await page.locator(`#sessions li[data-sid="${sid2}"]`).count() === 0);
    check('with an archived badge', await page.locator(`#sessions li[data-sid="${sid}"] .badge`, { hasText: 'archived' }).count() === 1);
    // a run on the archived session: the error is shown in words
    const arch = await apiPost('/api/chat', { session_id: sid, messages: [{ role: 'user', content: 'x' }] });
    check('server refuses a run on the archived session', arch.json && arch.json.error && arch.json.error.code === 'session_archived',
        JSON.stringify(arch));
    await page.click('#archive-btn');
    await page.locator('#archive-btn', { hasText: /^Archive$/ }).waitFor();
    check('unarchive enables the chat box again', !(await page.isDisabled('#chat-input')));
    await page.selectOption('#f-archived', 'active');

    // ---- hostile content renders inert ----
    await newSession(page);
    const hostile = 'Look <img src=x onerror="window.pwnedBy=1"> and [click me](javascript:window.pwnedBy=2) ' +
        'and [x](JaVaScRiPt:window.pwnedBy=3) <script>window.pwnedBy=4</script> ' +
        '<a href="javascript:window.pwnedBy=5">raw</a> ![pic](javascript:window.pwnedBy=6) ' +
        '[tab](java\tscript:window.pwnedBy=7) and [fine](https://example.com/ok)\n\n```html\n<img src=y onerror="window.pwnedBy=8">\n```';
    answer = await chat(page, hostile);
    const hsid = sidFrom(page.url());
    const inspect = () => page.evaluate(() => ({
        pwned: window.pwnedBy,
        imgs: document.querySelectorAll('img').length,
        scripts: [...document.querySelectorAll('#transcript script')].length,
        js: [...document.querySelectorAll('a[href]')].filter((a) => !/^(https?:|mailto:|#|blob:)/i.test(a.getAttribute('href')) && a.getAttribute('href') !== '').map((a) => a.getAttribute('href')),
        onattrs: [...document.querySelectorAll('#transcript *')].filter((e) => [...e.attributes].some((at) => /^on/i.test(at.name))).length,
        fine: [...document.querySelectorAll('#transcript a')].filter((a) => a.getAttribute('href') === 'https://example.com/ok').length,
        text: document.getElementById('transcript').textContent,
    }));
    for (const when of ['live', 'after reload']) {
        if (when === 'after reload') {
            await page.reload();
            await page.locator('#transcript > li.role-assistant').first().waitFor();
        }
        await page.waitForTimeout(300); // give any injected handler its chance to run
        const r = await inspect();
        check(`hostile (${when}): no script ran`, r.pwned === undefined, String(r.pwned));
        check(`hostile (${when}): no <img> element`, r.imgs === 0, String(r.imgs));
        check(`hostile (${when}): no <script> element`, r.scripts === 0);
        check(`hostile (${when}): no javascript: (or other scheme) href`, r.js.length === 0, r.js.join(' '));
        check(`hostile (${when}): no on* attribute`, r.onattrs === 0);
        check(`hostile (${when}): the HTML shows as text`, r.text.includes('<img src=x onerror="window.pwnedBy=1">'), r.text.slice(0, 200));
        check(`hostile (${when}): an https link still works`, r.fine >= 1, String(r.fine));
    }
    check('hostile session stored', !!hsid);

    // ---- status view ----
    await page.goto(BASE + '/#/status');
    await page.locator('#st-health dd', { hasText: 'ok' }).first().waitFor();
    check('status: health shown', /echo \/ echo-1/.test(await page.textContent('#st-health')));
    await page.locator('#st-config', { hasText: '"api_token"' }).waitFor();
    check('status: configuration shown', /"provider": "echo"/.test(await page.textContent('#st-config')));
    await page.locator('#st-ext', { hasText: 'clock' }).waitFor();
    check('status: extensions shown', true);
    // The four cards load independently: the jobs may still say "Loading…" after the others.
    await page.waitForFunction(() => {
        const box = document.getElementById('st-jobs');
        return box.childElementCount > 0 && box.textContent.trim() !== 'Loading…';
    }, null, { timeout: TIMEOUT });
    check('status: jobs shown', /No jobs configured|Schedule/.test(await page.textContent('#st-jobs')),
        await page.textContent('#st-jobs'));
    // the activity chart: one bar a minute with turns, from /api/metrics, named for a screen reader
    const chart = page.getByRole('img', { name: /turns and \d+ errors in the last hour/ });
    await chart.waitFor({ timeout: TIMEOUT });
    const label = await chart.getAttribute('aria-label');
    const turnsNow = Number((label.match(/^(\d+) turns/) || [])[1]);
    check('status: the chart counts this hour\'s turns', turnsNow > 0, label);
    check('status: the chart draws a bar for them', (await page.locator('#st-activity svg rect.bar').count()) > 0);
    await page.screenshot({ path: SHOTS + '/dashboard-status.png', fullPage: true });
    unnamed = await unnamedControls(page);
    check('status view: every control has an accessible name', unnamed.length === 0, unnamed.join(' '));

    // ---- phone width, dark ----
    const { page: phone } = await newPage({ viewport: { width: 390, height: 844 }, colorScheme: 'dark', isMobile: true, hasTouch: true });
    await phone.goto(BASE + '/#/');
    await phone.locator(`#sessions li[data-sid="${sid}"]`).waitFor();
    const bg = await phone.evaluate(() => getComputedStyle(document.body).backgroundColor);
    check('dark scheme followed', bg === 'rgb(17, 20, 24)', bg);
    const overflow = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check('phone width: no horizontal scrolling (list)', overflow <= 0, String(overflow));
    const boxTop = (await messageBox(phone).boundingBox()).y;
    const listTop = (await phone.getByRole('list', { name: /^Sessions/ }).boundingBox()).y;
    check('phone landing: the message box, focused, above the sessions', await hasFocus(messageBox(phone)) && boxTop < listTop,
        boxTop + ' vs ' + listTop);
    unnamed = await unnamedControls(phone);
    check('phone landing: every control has an accessible name', unnamed.length === 0, unnamed.join(' '));
    await phone.screenshot({ path: SHOTS + '/dashboard-phone-list-dark.png' });
    await phone.click(`#sessions li[data-sid="${sid}"] .row-link`);
    await phone.locator('#transcript > li.role-assistant').first().waitFor();
    const overflow2 = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check('phone width: no horizontal scrolling (transcript)', overflow2 <= 0, String(overflow2));
    check('phone width: the list pane gives way to the session', !(await phone.isVisible('#list-pane')));
    await phone.screenshot({ path: SHOTS + '/dashboard-phone-transcript-dark.png' });

    // ---- a background run started from the page, followed at #/run/<id> ----
    await page.goto(BASE + '/#/s/' + sid2);
    await page.locator('#transcript > li.role-assistant').first().waitFor();
    await page.check('#chat-bg');
    await page.fill('#chat-input', '/slow 100 in the background please');
    await page.press('#chat-input', 'Enter');
    await page.waitForURL(/#\/run\/run-[0-9a-f]{16}$/);
    await page.locator('#transcript > li.role-assistant:not(.streaming)', { hasText: 'in the background please (I was given' }).waitFor();
    check('background run from the page: followed to its answer', true);
    await page.uncheck('#chat-bg');

    // ---- errors in words: a busy session ----
    const busyRun = await apiPost('/api/chat/runs', { session_id: sid2, messages: [{ role: 'user', content: '/slow 2000 keep the session busy for a while' }] });
    check('a run keeps the session busy', busyRun.status === 202, JSON.stringify(busyRun));
    await page.evaluate(() => { location.hash = '#/'; });
    await page.goto(BASE + '/#/s/' + sid2);
    await page.locator('#live-run').waitFor();
    await page.fill('#chat-input', 'are you there?');
    await page.press('#chat-input', 'Enter');
    await page.locator('#chat-error', { hasText: 'busy' }).waitFor();
    const busyText = await page.textContent('#chat-error');
    check('busy session: said in words', /This session is busy with another run/.test(busyText) && !/session_busy/.test(busyText), busyText);
    check('busy session: the refused text is back in the box', await page.inputValue('#chat-input') === 'are you there?',
        await page.inputValue('#chat-input'));
    check('busy session: the refused message is not shown as sent',
        await page.locator('#transcript > li.role-user', { hasText: 'are you there?' }).count() === 0);
    // the transcript was not reloaded under the followed run: its answer still streams in
    const streaming = page.locator('#transcript > li.streaming');
    await streaming.filter({ hasText: 'keep the' }).waitFor();
    check('busy session: the followed run still streams after the refusal',
        await streaming.count() === 1 && (await page.getAttribute('#transcript > li.streaming', 'aria-busy')) === 'true');
    await page.locator('#transcript > li.role-assistant:not(.streaming)', { hasText: 'busy for a while (I was given' }).waitFor({ timeout: 60000 });
    check('the busy run is followed to its end', true);

    // ---- busy while the transcript still loads: the load the send made stale is redone ----
    const race = await apiPost('/api/chat/runs', { session_id: sid2, messages: [{ role: 'user', content: '/slow 1500 a second long run races the transcript' }] });
    check('a second run keeps the session busy', race.status === 202, JSON.stringify(race));
    await page.evaluate(() => { location.hash = '#/'; });
    let held;
    const intercepted = new Promise((resolve) => { held = resolve; });
    const slowMessages = async (route) => {
        held();
        await new Promise((r) => setTimeout(r, 2000));
        await route.continue().catch(() => {});
    };
    await page.route(`**/api/v1/chat/sessions/${sid2}/messages*`, slowMessages);
    await page.goto(BASE + '/#/s/' + sid2);
    await intercepted;
    await page.waitForFunction(() => !document.getElementById('chat-input').disabled);
    await page.fill('#chat-input', 'sent while the transcript loads');
    await page.press('#chat-input', 'Enter');
    await page.locator('#chat-error', { hasText: 'busy' }).waitFor();
    await page.unroute(`**/api/v1/chat/sessions/${sid2}/messages*`, slowMessages);
    await page.locator('#transcript > li.role-user', { hasText: 'a second long run races the transcript' }).waitFor();
    await page.locator('#transcript > li.streaming', { hasText: 'Echo:' }).waitFor();
    check('busy during a transcript load: the stored messages and the live answer are shown',
        await page.locator('#transcript > li.role-user', { hasText: 'keep the session busy for a while' }).count() === 1 &&
        await page.inputValue('#chat-input') === 'sent while the transcript loads');
    await page.locator('#transcript > li.role-assistant:not(.streaming)', { hasText: 'races the transcript (I was given' }).waitFor({ timeout: 60000 });
    check('and that run is followed to its end', true);

    // ---- paging: list (cursor, "Load more") and transcript ("Load earlier messages") ----
    for (let i = 0; i < 32; i++) {
        const r = await apiPost('/api/chat', { session_id: 'bulk-' + i, messages: [{ role: 'user', content: 'bulk session ' + i }] });
        if (r.status !== 200) check('bulk session ' + i, false, JSON.stringify(r));
    }
    for (let i = 0; i < 26; i++) {
        const r = await apiPost('/api/chat', { session_id: 'long-1', messages: [{ role: 'user', content: 'long turn ' + i }] });
        if (r.status !== 200) check('long turn ' + i, false, JSON.stringify(r));
    }
    await page.goto(BASE + '/#/');
    await page.reload();
    await page.locator('#load-more').waitFor();
    const firstPage = await page.locator('#sessions > li').count();
    check('list: one page of 30, newest first', firstPage === 30 &&
        await page.locator('#sessions > li').first().getAttribute('data-sid') === 'long-1', String(firstPage));
    await page.click('#load-more');
    await page.waitForFunction(() => document.querySelectorAll('#sessions > li').length > 30);
    await page.locator('#load-more').waitFor({ state: 'hidden' });
    const all = await page.locator('#sessions > li').count();
    const listed = (await apiGet('/api/v1/chat/sessions?limit=500')).json.sessions.length;
    check('list: "Load more" brings the rest, no duplicates', all === listed, all + ' vs ' + listed);
    await page.goto(BASE + '/#/s/long-1');
    await page.locator('#load-earlier').waitFor();
    check('transcript: the newest 50 of 52 messages first', await page.locator('#transcript > li').count() === 50);
    const lastText = await page.locator('#transcript > li').last().textContent();
    check('transcript: ends with the newest answer', /Echo: long turn 25 \(I was given \d+ earlier/.test(lastText), lastText);
    await page.click('#load-earlier');
    await page.locator('#load-earlier').waitFor({ state: 'hidden' });
    const first = await page.locator('#transcript > li').first().textContent();
    check('transcript: "Load earlier messages" brings the oldest', await page.locator('#transcript > li').count() === 52 && /long turn 0/.test(first), first);

    // ---- search what was said: keyboard only, a result opens its session at that message ----
    await page.goto(BASE + '/#/');
    const box = page.getByRole('searchbox', { name: 'Search sessions and messages' });
    await box.focus();
    await page.keyboard.type('"long turn 0"');
    await page.keyboard.press('Enter');
    const hitList = page.getByRole('list', { name: 'Message results' });
    await hitList.getByRole('listitem').first().waitFor();
    const hitItems = hitList.getByRole('listitem');
    const hitText = await hitItems.first().textContent();
    const api1 = ((await apiGet('/api/v1/chat/sessions/search?q=' + encodeURIComponent('"long turn 0"'))).json || { results: [] }).results[0] || {};
    check('search: a message result names the session and the role', api1.title && hitText.includes(api1.title) &&
        hitText.includes(api1.role === 'user' ? 'You' : 'Assistant'), hitText + ' vs ' + JSON.stringify(api1));
    const marks = await hitItems.first().locator('mark').allTextContents();
    const wanted = String(api1.snippet || '').split('**').filter((x, i) => i % 2 === 1);
    check('search: the matched words are <mark>ed in the snippet', marks.length > 0 &&
        JSON.stringify(marks) === JSON.stringify(wanted) && marks.join(' ').toLowerCase().includes('long turn 0'),
    JSON.stringify(marks) + ' vs ' + JSON.stringify(wanted));
    check('search: no "**" left in a snippet', !(await hitList.textContent()).includes('**'));
    await page.screenshot({ path: SHOTS + '/dashboard-search.png' });
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.screenshot({ path: SHOTS + '/dashboard-search-dark.png' });
    await page.emulateMedia({ colorScheme: 'light' });
    await box.focus();
    await page.keyboard.press('ArrowDown');
    const hitHref = await page.evaluate(() => document.activeElement && document.activeElement.getAttribute('href'));
    const firstHref = await hitItems.first().locator('a').getAttribute('href');
    check('search: the down arrow goes to the first result', /^#\/s\/long-1\?m=\d+$/.test(hitHref || '') && hitHref === firstHref,
        hitHref + ' vs ' + firstHref);
    await page.waitForFunction(() => document.querySelectorAll('#sessions li').length === 1, null, { timeout: 5000 }).catch(() => {});
    check('search: the quoted words filter the titles too', await page.locator('#sessions li').count() === 1 &&
        await page.locator('#sessions li[data-sid="long-1"]').count() === 1, await page.locator('#sessions li').count());
    await page.keyboard.press('Enter');
    const hitMid = (/\?m=(\d+)$/.exec(hitHref || '') || [])[1];
    const target = page.locator(`#transcript > li[data-mid="${hitMid}"]`);
    await target.waitFor();
    await page.waitForFunction(() => document.activeElement && document.activeElement.matches('#transcript > li.found'));
    check('search: the result opens its session at that (older than the first page) message',
        Number(hitMid) < 2 && /long turn 0/.test(await target.textContent()), hitMid);
    const inView = await target.evaluate((e) => {
        const r = e.getBoundingClientRect();
        return r.bottom > 0 && r.top < window.innerHeight;
    });
    check('search: the message is scrolled into view and highlighted', inView &&
        await target.evaluate((e) => e.classList.contains('found') && getComputedStyle(e).outlineStyle !== 'none'));
    await page.screenshot({ path: SHOTS + '/dashboard-search-open.png' });
    await page.goto(BASE + '/#/');
    await page.fill('#q', 'long turn');
    await page.press('#q', 'Enter');
    await page.locator('#hits-status', { hasText: '20 messages found' }).waitFor();
    await page.getByRole('button', { name: 'More results' }).click();
    await page.waitForFunction(() => document.querySelectorAll('#hits > li').length > 20);
    const hrefs = await hitList.locator('a').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
    check('search: "More results" brings the next page, no duplicates', new Set(hrefs).size === hrefs.length, hrefs.length);
    await page.fill('#q', 'zzqqxx nothing says this');
    await page.press('#q', 'Enter');
    await page.locator('#hits-status', { hasText: 'No message matches.' }).waitFor();
    check('search: no match says so', await hitList.getByRole('listitem').count() === 0);
    await page.fill('#q', '');
    await page.press('#q', 'Enter');
    await page.locator('#hits-pane').waitFor({ state: 'hidden' });
    check('search: an empty box hides the results', true);

    await historyChecks(page);

    // ---- images and documents are named (a session written as Strands writes it) ----
    if (ROOT) {
        const ts = '2026-01-02T03:04:05.000000+00:00';
        const adir = ROOT + '/session_attach-1/agents/agent_svc-agent';
        mkdirSync(adir + '/messages', { recursive: true });
        const dump = (f, o) => writeFileSync(f, JSON.stringify(o, null, 2));
        dump(ROOT + '/session_attach-1/session.json', { session_id: 'attach-1', session_type: 'AGENT', created_at: ts, updated_at: ts });
        dump(adir + '/agent.json', { agent_id: 'svc-agent', state: {}, conversation_manager_state: { __name__: 'SlidingWindowConversationManager', removed_message_count: 0, model_call_count: 1 }, _internal_state: {}, created_at: ts, updated_at: ts });
        const b64 = (n) => ({ __bytes_encoded__: true, data: Buffer.alloc(n, 7).toString('base64') });
        dump(adir + '/messages/message_0.json', { message: { role: 'user', content: [
            { text: 'Two attachments <img src=x onerror="window.pwnedBy=9">' },
            { image: { format: 'png', source: { bytes: b64(2048) } } },
            { document: { format: 'pdf', name: 'report<script>', source: { bytes: b64(5) } } }] },
            message_id: 0, redact_message: null, created_at: ts, updated_at: ts });
        dump(adir + '/messages/message_1.json', { message: { role: 'assistant', content: [{ text: 'Seen.' }] },
            message_id: 1, redact_message: null, created_at: ts, updated_at: ts });
        writeFileSync(adir + '/messages/message_2.json', '{"message": {"role": "assistant", "content": [{"te');
        await page.goto(BASE + '/#/s/attach-1');
        await page.locator('#transcript .attachment').first().waitFor();
        const att = await page.locator('#transcript .attachment').allTextContents();
        check('an image is named with its format and size', att.some((t) => /Image png, 2\.0 KB/.test(t)), att.join(' | '));
        check('a document is named with its name, format and size', att.some((t) => /Document report<script> — pdf, 5 B/.test(t)), att.join(' | '));
        check('attachments: no element from their names, only the image from its bytes', await page.evaluate(() =>
            document.querySelectorAll('#transcript script').length === 0 && window.pwnedBy === undefined &&
            [...document.querySelectorAll('#transcript img')].map((i) => i.getAttribute('src').slice(0, 22)).join() ===
            'data:image/png;base64,'));
        check('the document is a chip', await page.locator('#transcript .attachment.chip', { hasText: 'report<script>' }).count() === 1);
        // a damaged message file: the API's row says why, and so does the page
        const rows = (await apiGet('/api/v1/chat/sessions/attach-1/messages?limit=10')).json;
        const bad = rows && rows.messages.find((m) => m.message_id === 2);
        check('a damaged message: the API gives its error', bad && typeof bad.error === 'string' && bad.error !== '', JSON.stringify(bad));
        const badLi = page.getByRole('list', { name: 'Transcript' }).getByRole('listitem').filter({ hasText: 'Damaged message' });
        const badText = bad ? await badLi.textContent() : '';
        check('a damaged message shows its error, not an empty bubble', bad && badText.includes(bad.error), badText);
        // ---- what Strands keeps, read-only: an interrupt it waits on, a Swarm's state ----
        const sdir = ROOT + '/session_attach-1';
        mkdirSync(sdir + '/multi_agents/multi_agent_team', { recursive: true });
        dump(sdir + '/multi_agents/multi_agent_team/multi_agent.json', { type: 'swarm', id: 'team', status: 'completed',
            node_history: ['alpha', 'beta'], node_results: {}, next_nodes_to_execute: [], current_task: 'x',
            context: {}, _internal_state: { interrupt_state: { interrupts: {}, context: {}, activated: false } } });
        const call = { role: 'assistant', content: [{ toolUse: { toolUseId: 'c7', name: 'dangerous', input: {} } }] };
        const iid = 'v1:before_tool_call:c7:0f0f';
        dump(adir + '/agent.json', { agent_id: 'svc-agent', state: {}, conversation_manager_state: { __name__: 'SlidingWindowConversationManager', removed_message_count: 0, model_call_count: 1 },
            _internal_state: { interrupt_state: { interrupts: { [iid]: { id: iid, name: 'approve-it', reason: null, response: null } },
                context: { tool_use_message: call, tool_results: [] }, activated: true }, model_state: {} }, created_at: ts, updated_at: ts });
        await page.reload();
        await page.locator('#s-strands').waitFor();
        const st = await page.locator('#s-strands').textContent();
        check('the detail shows the Swarm read-only', /team — swarm, completed, nodes: alpha → beta/.test(st), st);
        check('... and the interrupt Strands waits on', /approve-it \(tool dangerous\)/.test(st), st);
        await page.locator('#s-title').scrollIntoViewIfNeeded();
        await page.screenshot({ path: SHOTS + '/dashboard-strands.png' });
    } else {
        skip('images and documents are named', 'no --root given');
    }

    // ---- attaching: the picker, a paste and a drop; the echo model says what it got ----
    await newSession(page);
    const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAAC0lEQVR42mNgAAIAAAUAAen63NgAAAAASUVORK5CYII=', 'base64');
    await page.locator('#attach-input').setInputFiles([{ name: 'dot.png', mimeType: 'image/png', buffer: PNG },
        { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('some notes\n') }]);
    await page.locator('#attachments li').nth(1).waitFor();
    check('the picker: two attachments shown, the image as a thumbnail', await page.locator('#attachments li img').count() === 1);
    await page.screenshot({ path: SHOTS + '/dashboard-attach.png' });
    const b1 = await page.locator('#transcript > li.role-assistant').count();
    await page.fill('#chat-input', 'what are these?');
    await page.press('#chat-input', 'Enter');
    const said = await answered(page, b1);
    check('sent as parts: the model was given both', /Attached: image png of 68 bytes, document txt "notes\.txt" of 11 bytes/.test(said), said);
    check('the sent image shows in the transcript', await page.locator('#transcript img.msg-image').count() >= 1);
    check('the attachments are cleared once sent', await page.locator('#attachments').isHidden());
    await page.screenshot({ path: SHOTS + '/dashboard-attached.png' });
    for (const how of ['paste', 'drop']) {
        await page.evaluate(([kind, b64]) => {
            const bin = Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0));
            const dt = new DataTransfer();
            dt.items.add(new File([bin], kind + '.png', { type: 'image/png' }));
            const target = kind === 'paste' ? document.getElementById('chat-input') : document.getElementById('chat-form');
            const ev = kind === 'paste' ? new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true })
                : new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true });
            target.dispatchEvent(ev);
        }, [how, PNG.toString('base64')]);
        await page.locator('#attachments li', { hasText: how + '.png' }).waitFor();
        check(how + ': the image is attached', true);
    }
    await page.getByRole('button', { name: 'Remove paste.png' }).click();
    check('an attachment can be removed', await page.locator('#attachments li').count() === 1);
    const b2 = await page.locator('#transcript > li.role-assistant').count();
    await page.press('#chat-input', 'Enter');
    const said2 = await answered(page, b2);
    check('an image alone is sent', /Attached: image png of 68 bytes\.\)/.test(said2), said2);

    check('no page errors', pageErrors.length === 0, pageErrors.join(' | '));
    check('nothing fetched from outside', external.length === 0, external.join(' '));
    out({ done: true });
} catch (e) {
    check('browser script ran to the end', false, String(e && e.stack || e));
}
await browser.close();
