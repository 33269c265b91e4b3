// The svc dashboard: session list, transcript, chat, status. Plain ES module, no framework.
// Message content is rendered only through markdown.js (DOM nodes + textContent).
import { api, apiText, stream, download, describeError, setToken, getToken, onAuthRequired, ApiError } from './api.js';
import { renderMarkdown } from './markdown.js';

const $ = (id) => document.getElementById(id);
const PAGE = 30;          // sessions per list page
const MSG_PAGE = 50;      // messages per transcript page (newest first)

function h(tag, attrs = {}, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
        if (v === undefined || v === null || v === false) continue;
        if (k === 'class') e.className = v;
        else if (k === 'text') e.textContent = v;
        else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
        else e.setAttribute(k, v === true ? '' : v);
    }
    for (const c of children) {
        if (c === null || c === undefined || c === false) continue;
        e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    }
    return e;
}

// ---- formatting ------------------------------------------------------------------------

const rtf = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });
function timeAgo(iso) {
    const t = Date.parse(iso);
    if (!Number.isFinite(t)) return '';
    const s = Math.round((t - Date.now()) / 1000);
    const a = Math.abs(s);
    if (a < 45) return 'just now';
    if (a < 3600) return rtf.format(Math.round(s / 60), 'minute');
    if (a < 86400) return rtf.format(Math.round(s / 3600), 'hour');
    if (a < 86400 * 30) return rtf.format(Math.round(s / 86400), 'day');
    if (a < 86400 * 365) return rtf.format(Math.round(s / (86400 * 30)), 'month');
    return rtf.format(Math.round(s / (86400 * 365)), 'year');
}
function timeEl(iso) {
    const full = iso ? new Date(iso).toLocaleString() : '';
    return h('time', { datetime: iso || '', title: full, text: timeAgo(iso) });
}
function fmtBytes(n) {
    if (!Number.isFinite(n)) return 'unknown size';
    if (n < 1024) return n + ' B';
    if (n < 1024 * 1024) return (n / 1024).toFixed(1) + ' KB';
    return (n / 1024 / 1024).toFixed(1) + ' MB';
}
function plural(n, word) {
    return n + ' ' + word + (n === 1 ? '' : 's');
}
function badge(status, archived) {
    const frag = document.createDocumentFragment();
    const st = status || 'idle';
    frag.appendChild(h('span', { class: 'badge st-' + st.replace(/[^a-z]/g, ''), text: st }));
    if (archived) frag.appendChild(h('span', { class: 'badge st-archived', text: 'archived' }));
    return frag;
}

let toastTimer = 0;
function toast(text) {
    const t = $('toast');
    t.textContent = text;
    t.classList.add('show');
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => t.classList.remove('show'), 5000);
}

// ---- auth ------------------------------------------------------------------------------

let tokenWaiters = [];
function askToken(reason) {
    const dlg = $('token-dialog');
    if (!dlg.open) {
        $('token-error').textContent = '';
        $('token-input').value = '';
        dlg.showModal();
        $('token-input').focus();
    }
    if (reason) $('token-error').textContent = reason;
    return new Promise((resolve) => tokenWaiters.push(resolve));
}
onAuthRequired((e) => {
    setToken('');
    askToken(e.code === 'invalid_token' ? 'That token was not accepted.' : '');
});
$('token-form').addEventListener('submit', (ev) => {
    const v = $('token-input').value.trim();
    if (!v) {
        ev.preventDefault();
        return;
    }
    setToken(v);
    const w = tokenWaiters;
    tokenWaiters = [];
    w.forEach((fn) => fn());
    route(); // redo what the 401 interrupted
});
$('token-dialog').addEventListener('cancel', (ev) => ev.preventDefault());

// Who the token acts for (GET /api/me): {user_id, admin, users}; null until known.
let me = null;
async function loadMe() {
    try {
        me = await api('GET', 'api/me');
    } catch {
        me = null; // a 401 asks for the token; an older server has no /api/me
    }
    const who = $('whoami');
    who.hidden = !(me && me.users);
    if (me && me.users) who.textContent = 'Signed in as ' + (me.user_id || 'the server token') + (me.admin ? ' (admin)' : '');
    $('sign-out').hidden = !getToken();
}
$('sign-out').addEventListener('click', () => {
    setToken('');
    me = null;
    stopFollowing();
    if (current.chat) current.chat.abort();
    list.rows.clear();
    list.selected.clear();
    updateSelection();
    $('sessions').replaceChildren();
    showPinned([]);
    $('transcript').replaceChildren();
    $('whoami').hidden = true;
    $('sign-out').hidden = true;
    listLoaded = false;
    history.replaceState(null, '', '#/');
    askToken('You are signed out.');
});

// ---- session list ----------------------------------------------------------------------

const list = { cursor: null, loading: false, gen: 0, selected: new Set(), rows: new Map(), pollTimer: 0 };

// The list's filters as query parameters; `pinned` ("true"/"false") picks one group.
function listQuery(cursor, pinned) {
    const p = new URLSearchParams({ limit: String(PAGE), pinned });
    for (const t of $('f-tag').value.split(',').map((x) => x.trim()).filter(Boolean)) p.append('tag', t);
    const q = $('q').value.replace(/"/g, ' ').trim(); // a quoted phrase is for the message search
    if (q) p.set('q', q);
    const st = $('f-status').value;
    if (st) p.set('status', st);
    const ar = $('f-archived').value;
    if (ar === 'all') p.set('include_archived', 'true');
    if (ar === 'archived') p.set('archived_only', 'true');
    if (cursor) p.set('cursor', cursor);
    return 'api/v1/chat/sessions?' + p.toString();
}

function sessionRow(s) {
    const sid = s.session_id;
    const title = s.title || sid;
    const cb = h('input', { type: 'checkbox', class: 'sel', 'aria-label': 'Select ' + title });
    cb.checked = list.selected.has(sid);
    cb.addEventListener('change', () => {
        if (cb.checked) list.selected.add(sid);
        else list.selected.delete(sid);
        updateSelection();
    });
    const link = h('a', { class: 'row-link', href: '#/s/' + encodeURIComponent(sid), 'data-sid': sid },
        h('span', { class: 'row-title', text: title }),
        h('span', { class: 'row-meta' }, timeEl(s.updated_at), ' · ', plural(s.message_count || 0, 'message'), ' ',
            badge(s.status, s.archived), ...(s.tags || []).map((t) => h('span', { class: 'badge tag', text: '#' + t })),
            me && me.admin && me.users ? h('span', { class: 'row-owner', text: ' · owner ' + (s.user_id || 'admins') }) : null));
    const li = h('li', { class: 'row', 'data-sid': sid }, cb, link);
    if (current.sid === sid) li.classList.add('current');
    return li;
}

function updateSelection() {
    const n = list.selected.size;
    $('export-selected').disabled = n === 0;
    $('selected-count').textContent = n ? plural(n, 'session') + ' selected' : '';
}

async function loadList(more = false) {
    const gen = more ? list.gen : ++list.gen;
    if (!more) {
        list.cursor = null;
        list.rows.clear();
    }
    list.loading = true;
    $('list-status').textContent = 'Loading…';
    try {
        const [r, pinned] = await Promise.all([api('GET', listQuery(more ? list.cursor : null, 'false')),
            more ? null : api('GET', listQuery(null, 'true'))]);
        if (gen !== list.gen) return; // filters changed meanwhile
        const ul = $('sessions');
        if (!more) {
            ul.replaceChildren();
            showPinned(pinned.sessions);
        }
        for (const s of r.sessions) {
            if (list.rows.has(s.session_id)) continue;
            const li = sessionRow(s);
            list.rows.set(s.session_id, { li, s });
            ul.appendChild(li);
        }
        list.cursor = r.next_cursor;
        $('load-more').hidden = !r.next_cursor;
        $('list-status').textContent = list.rows.size === 0 ? 'No sessions match.' : '';
        $('recent-heading').hidden = $('pinned').hidden || ul.children.length === 0;
        scheduleListPoll();
    } catch (e) {
        if (gen === list.gen) $('list-status').textContent = describeError(e);
    } finally {
        list.loading = false;
    }
}

// Pinned sessions come first, in their own group (one page of them).
function showPinned(sessions) {
    const ul = $('pinned');
    ul.replaceChildren();
    for (const s of sessions) {
        const li = sessionRow(s);
        list.rows.set(s.session_id, { li, s });
        ul.appendChild(li);
    }
    ul.hidden = sessions.length === 0;
    $('pinned-heading').hidden = ul.hidden;
}

// Live status: while a listed session is running, refresh its row every 2 s.
function scheduleListPoll() {
    clearTimeout(list.pollTimer);
    const running = [...list.rows.values()].filter((r) => r.s.status === 'running');
    if (running.length === 0) return;
    list.pollTimer = setTimeout(async () => {
        for (const r of running) {
            try {
                const s = await api('GET', 'api/v1/chat/sessions/' + encodeURIComponent(r.s.session_id));
                updateRow(s);
            } catch {
                /* the next full load shows it */
            }
        }
        scheduleListPoll();
    }, 2000);
}

function updateRow(s) {
    const r = list.rows.get(s.session_id);
    if (!r) return;
    if (!!r.s.pinned !== !!s.pinned) {
        loadList(); // it changes group
        return;
    }
    const li = sessionRow(s);
    r.li.replaceWith(li);
    list.rows.set(s.session_id, { li, s });
}

let searchTimer = 0;
$('q').addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => loadList(), 250);
});
$('filters').addEventListener('submit', (ev) => {
    ev.preventDefault();
    loadList();
    searchMessages();
});
$('f-status').addEventListener('change', () => loadList());
$('f-archived').addEventListener('change', () => loadList());
$('f-tag').addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => loadList(), 250);
});
$('load-more').addEventListener('click', () => loadList(true));
// Arrow keys move between rows.
$('list-pane').addEventListener('keydown', (ev) => {
    if (ev.key !== 'ArrowDown' && ev.key !== 'ArrowUp') return;
    const links = [...$('list-pane').querySelectorAll('.row-link')];
    const i = links.indexOf(document.activeElement);
    if (i < 0) return;
    const j = ev.key === 'ArrowDown' ? Math.min(links.length - 1, i + 1) : Math.max(0, i - 1);
    links[j].focus();
    ev.preventDefault();
});

// ---- message search (GET /api/v1/chat/sessions/search): Enter or a pause in typing ----

const hits = { q: '', cursor: null, gen: 0, timer: 0 };

// The snippet's matched words come between `**`; each becomes a <mark> built here.
function snippetEl(snippet) {
    const p = h('p', { class: 'hit-snippet' });
    String(snippet || '').split('**').forEach((part, i) => {
        if (part) p.append(i % 2 ? h('mark', { text: part }) : document.createTextNode(part));
    });
    return p;
}

function hitRow(r) {
    const href = '#/s/' + encodeURIComponent(r.session_id) + '?m=' + encodeURIComponent(String(r.message_id));
    return h('li', { class: 'row hit' }, h('a', { class: 'row-link hit-link', href },
        h('span', { class: 'row-title', text: r.title || r.session_id }),
        h('span', { class: 'row-meta' }, ROLE_LABEL[r.role] || r.role, ' · ', timeEl(r.updated_at)),
        snippetEl(r.snippet)));
}

async function searchMessages(more = false) {
    clearTimeout(hits.timer);
    const q = $('q').value.trim();
    if (!more && q === hits.q && q) return; // the same words: the results stand
    const gen = more ? hits.gen : ++hits.gen;
    hits.q = q;
    $('hits-pane').hidden = !q;
    if (!more) $('hits').replaceChildren();
    if (!q) return;
    const p = new URLSearchParams({ q, limit: '20' });
    if ($('f-archived').value !== 'active') p.set('include_archived', 'true');
    if (more && hits.cursor) p.set('cursor', hits.cursor);
    $('hits-status').textContent = 'Searching…';
    try {
        const r = await api('GET', 'api/v1/chat/sessions/search?' + p.toString());
        if (gen !== hits.gen) return;
        $('hits').append(...r.results.map(hitRow));
        hits.cursor = r.next_cursor || null;
        $('more-hits').hidden = !hits.cursor;
        const n = $('hits').children.length;
        $('hits-status').textContent = n ? plural(n, 'message') + ' found' : 'No message matches.';
    } catch (e) {
        if (gen === hits.gen) $('hits-status').textContent = describeError(e);
    }
}
$('q').addEventListener('input', () => {
    clearTimeout(hits.timer);
    hits.timer = setTimeout(() => searchMessages(), 600);
});
$('more-hits').addEventListener('click', () => searchMessages(true));
$('f-archived').addEventListener('change', () => {
    hits.q = ''; // archived sessions in or out: the results change
    searchMessages();
});
// Down arrow from the box goes to the first result; arrows move between results.
$('q').addEventListener('keydown', (ev) => {
    const first = $('hits').querySelector('.hit-link');
    if (ev.key !== 'ArrowDown' || $('hits-pane').hidden || !first) return;
    first.focus();
    ev.preventDefault();
    ev.stopPropagation(); // else the list pane's arrows move on from it at once
});
$('hits').addEventListener('keydown', (ev) => {
    if (ev.key !== 'ArrowDown' && ev.key !== 'ArrowUp') return;
    const links = [...$('hits').querySelectorAll('.hit-link')];
    const i = links.indexOf(document.activeElement);
    if (i < 0) return;
    if (ev.key === 'ArrowUp' && i === 0) $('q').focus();
    else links[ev.key === 'ArrowDown' ? Math.min(links.length - 1, i + 1) : i - 1].focus();
    ev.preventDefault();
    ev.stopPropagation(); // the list pane's own arrows are for the session rows
});

// ---- export ----------------------------------------------------------------------------

async function exportSessions(ids) {
    toast('Preparing the export…');
    try {
        const r = await download('POST', 'api/v1/chat/sessions/export',
            { session_ids: ids, include_archived: true, download: true });
        if (r.json) {
            toast('Exported ' + plural(r.json.session_count, 'session') + ' on the server.');
            return;
        }
        const url = URL.createObjectURL(r.blob);
        const a = h('a', { href: url, download: r.filename, hidden: true });
        document.body.appendChild(a);
        a.click();
        a.remove();
        setTimeout(() => URL.revokeObjectURL(url), 60000);
        toast('Downloaded ' + r.filename + ' (' + fmtBytes(r.blob.size) + ').');
    } catch (e) {
        toast('Export failed: ' + describeError(e));
    }
}
$('export-selected').addEventListener('click', () => exportSessions([...list.selected]));
$('export-btn').addEventListener('click', () => current.sid && exportSessions([current.sid]));

// ---- one session -----------------------------------------------------------------------

// gen: bumped when another session (or view) opens; tgen: bumped by each transcript load
// and each chat, so that a load answered late never replaces newer content.
// followLi: the live answer of a followed run (kept at the end when the transcript reloads);
// tloading: transcript loads in flight.
const current = { sid: null, summary: null, nextOffset: null, chat: null, follow: null, followLi: null, followGen: 0, pollTimer: 0, gen: 0, tgen: 0, tloading: 0 };

// aria-busy on the transcript while it loads or a chat streams (also what tests wait for).
let pending = 0;
function busy(delta) {
    pending += delta;
    $('transcript').setAttribute('aria-busy', pending > 0 ? 'true' : 'false');
}

function showView(name) {
    $('session-view').hidden = name !== 'session' && name !== 'new';
    $('status-view').hidden = name !== 'status';
    document.body.dataset.view = name;
    for (const [id, v] of [['nav-sessions', 'sessions'], ['nav-status', 'status']]) {
        if ((name === 'status') === (v === 'status')) $(id).setAttribute('aria-current', 'page');
        else $(id).removeAttribute('aria-current');
    }
}

function renderSummary(s) {
    current.summary = s;
    $('s-title').textContent = s ? s.title || s.session_id : 'New session';
    document.title = (s ? s.title || s.session_id : 'New session') + ' · svc';
    const meta = $('s-meta');
    meta.replaceChildren();
    $('s-actions').hidden = !s;
    $('rename-btn').hidden = !s;
    $('s-usage').hidden = !s;
    $('s-tags').hidden = !s;
    renderHistory(s);
    if (!s) {
        meta.textContent = 'The session is created with your first message.';
        return;
    }
    meta.append(badge(s.status, s.archived), ' ', h('code', { text: s.session_id }), ' · updated ',
        timeEl(s.updated_at), ' · ', plural(s.message_count || 0, 'message'), ' · ',
        plural(s.run_count || 0, 'run'), s.model ? ' · model ' + s.model : '',
        me && me.admin && me.users ? ' · owner ' + (s.user_id || 'admins') : '');
    if (s.last_error && s.status !== 'running') {
        meta.append(h('span', { class: 'error', text: ' · last run: ' + describeError({ code: s.last_error.code, message: s.last_error.message }) }));
    }
    $('archive-btn').textContent = s.archived ? 'Unarchive' : 'Archive';
    $('chat-input').disabled = !!s.archived;
    $('send-btn').disabled = !!s.archived || !!current.chat;
    $('chat-input').placeholder = s.archived ? 'This session is archived: unarchive it to continue.'
        : 'Write a message (Enter sends, Shift+Enter for a new line)';
    for (const li of $('list-pane').querySelectorAll('li.row')) li.classList.toggle('current', li.dataset.sid === s.session_id);
}

// Where a branch came from, whether it is pinned, its tags.
function renderHistory(s) {
    const ff = s && s.forked_from;
    const p = $('s-forked');
    p.hidden = !ff;
    if (ff) {
        p.replaceChildren('Branched from ', h('a', { href: '#/s/' + encodeURIComponent(ff.session_id), text: ff.session_id }),
            ff.message_id !== undefined ? ' at message ' + ff.message_id : '');
    }
    $('pin-btn').textContent = s && s.pinned ? 'Unpin' : 'Pin';
    $('pin-btn').setAttribute('aria-pressed', String(!!(s && s.pinned)));
    const ul = $('tag-list');
    ul.replaceChildren(...((s && s.tags) || []).map((t) => h('li', { class: 'badge tag' }, '#' + t, ' ',
        h('button', { type: 'button', class: 'chip-x', 'aria-label': 'Remove tag ' + t, title: 'Remove tag ' + t, text: '×',
            onclick: () => patchSession({ tags: s.tags.filter((x) => x !== t) }, 'Tag ' + t + ' removed.') }))));
}

// PATCH the open session (pinned, tags), show the answer, say `done`.
async function patchSession(fields, done) {
    if (!current.sid) return;
    try {
        const s = await api('PATCH', 'api/v1/chat/sessions/' + encodeURIComponent(current.sid), fields);
        renderSummary(s);
        if (list.rows.has(s.session_id)) updateRow(s);
        else loadList();
        toast(done);
        return s;
    } catch (e) {
        $('session-msg').textContent = describeError(e);
        return null;
    }
}

async function loadTokens(sid) {
    const dl = $('s-tokens');
    try {
        const t = await api('GET', 'api/chat/sessions/' + encodeURIComponent(sid) + '/tokens');
        dl.replaceChildren();
        const rows = [['Last prompt', t.last_prompt_tokens], ['Last completion', t.last_completion_tokens],
            ['Total (all runs)', t.cumulative_total_tokens], ['Prompt (all runs)', t.cumulative_prompt_tokens],
            ['Completion (all runs)', t.cumulative_completion_tokens], ['Context window', t.model_context_window],
            ['Window used', t.utilization_ratio !== undefined ? (100 * t.utilization_ratio).toFixed(2) + ' %' : undefined],
            ['Messages out of window', t.removed_message_count]];
        for (const [k, v] of rows) {
            if (v === undefined || v === null) continue;
            dl.append(h('dt', { text: k }), h('dd', { text: typeof v === 'number' ? v.toLocaleString('en') : String(v) }));
        }
        if (!dl.firstChild) dl.append(h('dd', { text: 'No runs yet.' }));
    } catch (e) {
        dl.replaceChildren(h('dd', { text: describeError(e) }));
    }
}

// Size of a Strands bytes value ({"__bytes_encoded__": true, "data": base64}) or a string.
function byteSize(src) {
    const b = src && src.bytes;
    if (!b) return NaN;
    const data = typeof b === 'string' ? b : b.data;
    if (typeof data !== 'string') return NaN;
    const clean = data.replace(/\s/g, '');
    const pad = clean.endsWith('==') ? 2 : clean.endsWith('=') ? 1 : 0;
    return Math.floor(clean.length * 3 / 4) - pad;
}

function jsonPre(v) {
    let text;
    if (typeof v === 'string') {
        try {
            text = JSON.stringify(JSON.parse(v), null, 2);
        } catch {
            text = v;
        }
    } else {
        text = JSON.stringify(v, null, 2);
    }
    return h('pre', { class: 'code' }, h('code', { text }));
}

function attachmentBlock(kind, b) {
    const fmt = (b && b.format) || 'unknown format';
    const name = b && b.name ? b.name + ' — ' : '';
    return h('p', { class: 'attachment' }, h('span', { class: 'att-kind', text: kind }), ' ',
        name + fmt + ', ' + fmtBytes(byteSize(b && b.source)));
}

function toolResultBody(parts) {
    const body = h('div', { class: 'tool-body' });
    for (const p of parts || []) {
        if (typeof p.text === 'string') body.append(h('pre', { class: 'code' }, h('code', { text: p.text })));
        else if (p.json !== undefined) body.append(jsonPre(p.json));
        else if (p.image) body.append(attachmentBlock('Image', p.image));
        else if (p.document) body.append(attachmentBlock('Document', p.document));
    }
    if (!body.firstChild) body.append(h('p', { class: 'muted', text: '(empty result)' }));
    return body;
}

// "<server>__<tool>" is a tool of an MCP server (SPEC 16): say which server answered.
function mcpServer(name) {
    const i = (name || '').indexOf('__');
    return i > 0 ? h('span', { class: 'badge', title: 'tool ' + name.slice(i + 2) + ' of MCP server ' + name.slice(0, i), text: 'MCP ' + name.slice(0, i) }) : null;
}

function toolCallBlock(name, id, input) {
    return h('details', { class: 'tool tool-call' },
        h('summary', {}, h('span', { class: 'tool-kind', text: 'Tool call' }), ' ', h('code', { text: name || '?' }), ' ', mcpServer(name)),
        id ? h('p', { class: 'muted', text: 'call id ' + id }) : null, jsonPre(input ?? {}));
}

function toolResultBlock(id, status, parts, name) {
    const ok = status !== 'error';
    return h('details', { class: 'tool tool-result' + (ok ? '' : ' failed') },
        h('summary', {}, h('span', { class: 'tool-kind', text: ok ? 'Tool result' : 'Tool error' }),
            name ? ' ' : '', name ? h('code', { text: name }) : null, ' ', mcpServer(name)),
        id ? h('p', { class: 'muted', text: 'call id ' + id }) : null, toolResultBody(parts));
}

// Tool names by call id, so that a result names the tool its call used.
const toolNames = new Map();

// The body of one stored message, from its native content blocks.
function messageBody(m) {
    const frag = h('div', { class: 'msg-body' });
    if (typeof m.error === 'string' && m.error) {
        // a message file the server could not read: its row has no content, only why
        frag.append(h('p', { class: 'error', text: 'This message could not be read: ' + m.error }));
        return frag;
    }
    const blocks = m.raw_native && Array.isArray(m.raw_native.content) ? m.raw_native.content : null;
    if (!blocks) {
        frag.append(renderMarkdown(m.content || ''));
        return frag;
    }
    for (const b of blocks) {
        if (typeof b.text === 'string') frag.append(renderMarkdown(b.text));
        else if (b.toolUse) {
            toolNames.set(b.toolUse.toolUseId, b.toolUse.name);
            frag.append(toolCallBlock(b.toolUse.name, b.toolUse.toolUseId, b.toolUse.input));
        } else if (b.toolResult) {
            frag.append(toolResultBlock(b.toolResult.toolUseId, b.toolResult.status, b.toolResult.content,
                toolNames.get(b.toolResult.toolUseId)));
        } else if (b.image) frag.append(attachmentBlock('Image', b.image));
        else if (b.document) frag.append(attachmentBlock('Document', b.document));
        else if (b.reasoningContent) {
            const rt = b.reasoningContent.reasoningText;
            frag.append(h('details', { class: 'tool reasoning' }, h('summary', { text: 'Reasoning' }),
                renderMarkdown(rt && typeof rt.text === 'string' ? rt.text : '')));
        }
    }
    if (!frag.firstChild) frag.append(h('p', { class: 'muted', text: '(empty message)' }));
    return frag;
}

const ROLE_LABEL = { user: 'You', assistant: 'Assistant', tool: 'Tool', system: 'System', unknown: 'Damaged message' };
function messageItem(role, created, body, id) {
    return h('li', { class: 'msg role-' + role, 'data-mid': id },
        h('div', { class: 'msg-head' }, h('span', { class: 'role', text: ROLE_LABEL[role] || role }),
            created ? timeEl(created) : null),
        body);
}

// Under a stored answer: rate it (with an optional comment), or branch the session there.
function messageActions(m) {
    const fb = { rating: (m.feedback && m.feedback.rating) || null, comment: (m.feedback && m.feedback.comment) || '' };
    const sid = current.sid;
    const url = 'api/v1/chat/sessions/' + encodeURIComponent(sid) + '/messages/' + encodeURIComponent(m.message_id) + '/feedback';
    const thumb = (rating, label, icon) => h('button', { type: 'button', class: 'small thumb', 'aria-label': label,
        title: label, 'aria-pressed': String(fb.rating === rating), 'data-rating': rating, text: icon,
        onclick: () => rate(fb.rating === rating ? null : rating) });
    const up = thumb('up', 'Good answer', '\u25B2 Good');
    const down = thumb('down', 'Bad answer', '\u25BC Bad');
    const comment = h('input', { type: 'text', maxlength: '2000', 'aria-label': 'Comment on this answer', placeholder: 'optional comment' });
    comment.value = fb.comment;
    const form = h('form', { class: 'fb-comment', hidden: !fb.rating && !fb.comment }, comment,
        h('button', { type: 'submit', class: 'small', text: 'Save comment' }));
    async function put(body, said) {
        try {
            const r = await api('PUT', url, body);
            fb.rating = r.feedback ? r.feedback.rating : null;
            fb.comment = r.feedback ? r.feedback.comment || '' : '';
            up.setAttribute('aria-pressed', String(fb.rating === 'up'));
            down.setAttribute('aria-pressed', String(fb.rating === 'down'));
            toast(said);
        } catch (e) {
            toast('Feedback not saved: ' + describeError(e));
        }
    }
    async function rate(rating) {
        await put({ rating, comment: comment.value.trim() || undefined }, rating ? 'Thanks for the feedback.' : 'Rating removed.');
        form.hidden = false;
        if (rating) comment.focus();
    }
    form.addEventListener('submit', (ev) => {
        ev.preventDefault();
        put({ rating: fb.rating, comment: comment.value.trim() || undefined }, 'Comment saved.');
    });
    const branch = h('button', { type: 'button', class: 'small', text: 'Branch from here',
        onclick: () => branchAt(sid, m.message_id) });
    return h('div', { class: 'msg-actions', role: 'group', 'aria-label': 'Answer actions' }, up, down, branch, form);
}

// Fork the session at a message and open the branch at once.
async function branchAt(sid, messageId) {
    try {
        const s = await api('POST', 'api/v1/chat/sessions/' + encodeURIComponent(sid) + '/fork', { message_id: messageId });
        toast('Branched into a new session.');
        loadList();
        location.hash = '#/s/' + encodeURIComponent(s.session_id);
    } catch (e) {
        $('session-msg').textContent = describeError(e);
    }
}

async function loadTranscript(sid, earlier = false) {
    const gen = current.gen;
    const tgen = ++current.tgen;
    const offset = earlier ? current.nextOffset : 0;
    let r;
    busy(1);
    current.tloading++;
    try {
        r = await api('GET', 'api/v1/chat/sessions/' + encodeURIComponent(sid) +
            '/messages?order=desc&limit=' + MSG_PAGE + '&offset=' + offset);
    } finally {
        current.tloading--;
        busy(-1);
    }
    if (gen !== current.gen || tgen !== current.tgen) return;
    const ol = $('transcript');
    if (!earlier) ol.replaceChildren();
    // The page is newest first; the transcript reads oldest first.
    const items = r.messages.slice().reverse().map((m) => {
        const li = messageItem(m.role, m.created_at, messageBody(m), m.message_id);
        if (m.role === 'assistant' && !m.error) li.append(messageActions(m));
        return li;
    });
    ol.prepend(...items);
    current.nextOffset = r.next_offset;
    const btn = $('load-earlier');
    btn.hidden = r.next_offset === null || r.next_offset === undefined;
    if (!btn.hidden) btn.textContent = 'Load earlier messages (' + (r.total - ol.children.length) + ' more)';
    placeStopped(sid);
    if (!earlier && current.followLi && current.followGen === gen) {
        ol.append(current.followLi); // a followed run's answer goes on streaming below
    } else if (!earlier && ol.children.length === 0) {
        ol.append(h('li', { class: 'msg empty muted', text: 'No messages yet.' }));
    }
}
$('load-earlier').addEventListener('click', async () => {
    try {
        await loadTranscript(current.sid, true);
    } catch (e) {
        $('session-msg').textContent = describeError(e);
    }
});

function stopFollowing() {
    if (current.follow) current.follow.abort();
    current.follow = null;
    clearTimeout(current.pollTimer);
    $('live-run').hidden = true;
}

// `mid`: a message to scroll to and highlight (a search result's), instead of the end.
async function openSession(sid, runId, mid) {
    stopFollowing();
    if (current.chat && current.sid !== sid) current.chat.abort();
    current.gen++;
    const gen = current.gen;
    current.sid = sid;
    current.nextOffset = null;
    showView(sid ? 'session' : 'new');
    $('session-msg').textContent = '';
    $('chat-error').textContent = '';
    $('rename-form').hidden = true;
    $('transcript').replaceChildren();
    if (!sid) {
        renderSummary(null);
        $('load-earlier').hidden = true;
        $('chat-input').disabled = false;
        $('send-btn').disabled = false;
        $('chat-input').focus();
        return;
    }
    try {
        const s = await api('GET', 'api/v1/chat/sessions/' + encodeURIComponent(sid));
        if (gen !== current.gen) return;
        renderSummary(s);
        await loadTranscript(sid);
        if (gen !== current.gen) return;
        loadTokens(sid);
        const live = runId || (s.status === 'running' && s.current_run && s.current_run.run_id);
        if (live) followRun(live, gen);
        $('s-title').focus({ preventScroll: true });
        if (mid === undefined || !(await revealMessage(sid, mid, gen))) scrollTranscriptEnd();
    } catch (e) {
        if (gen !== current.gen) return;
        renderSummary(null);
        $('s-title').textContent = sid;
        $('chat-form').hidden = false;
        $('session-msg').textContent = describeError(e);
    }
}

// Load earlier pages until message `mid` is in the transcript, then scroll to it, mark it
// and give it the focus (a keyboard user goes on reading from there). False if not found.
async function revealMessage(sid, mid, gen) {
    const find = () => $('transcript').querySelector('li[data-mid="' + CSS.escape(mid) + '"]');
    while (!find() && !$('load-earlier').hidden) {
        await loadTranscript(sid, true);
        if (gen !== current.gen) return true;
    }
    const li = find();
    if (!li) return false;
    li.classList.add('found');
    li.setAttribute('tabindex', '-1');
    li.scrollIntoView({ block: 'center' });
    li.focus({ preventScroll: true });
    return true;
}

function scrollTranscriptEnd() {
    const last = $('transcript').lastElementChild;
    if (last) last.scrollIntoView({ block: 'end' });
}

// ---- following a run (events stream of /api/chat/runs, or polling) ---------------------

function liveBubble() {
    const body = h('div', { class: 'msg-body' });
    const li = messageItem('assistant', new Date().toISOString(), body, '');
    li.classList.add('streaming');
    li.setAttribute('aria-busy', 'true');
    const md = h('div', { class: 'md' });
    body.append(md);
    return { li, body, md, text: '', tools: new Map() };
}

// Apply an svc event (phase, delta, tool_start, tool_result, error...) to a live bubble.
function applyEvent(b, ev) {
    if (!ev || typeof ev !== 'object') return;
    if (ev.type === 'delta' && typeof ev.text === 'string') {
        b.text += ev.text;
        const md = renderMarkdown(b.text);
        b.md.replaceWith(md);
        b.md = md;
    } else if (ev.type === 'tool_start') {
        const d = toolCallBlock(ev.tool, ev.call_id, ev.arguments);
        b.body.insertBefore(d, b.md);
    } else if (ev.type === 'tool_result') {
        const parts = typeof ev.content === 'string' ? [{ text: ev.content }] : Array.isArray(ev.content) ? ev.content : [{ json: ev.content }];
        const d = toolResultBlock(ev.call_id, ev.ok === false ? 'error' : 'success', ev.error ? [{ text: String(ev.error) }] : parts, ev.tool);
        b.body.insertBefore(d, b.md);
    }
}

async function followRun(runId, gen) {
    const ctl = new AbortController();
    current.follow = ctl;
    const live = $('live-run');
    live.hidden = false;
    live.textContent = 'A run is in progress (' + runId + ')…';
    const bubble = liveBubble();
    let started = false;
    let endEvent = null;
    try {
        await stream('GET', 'api/chat/runs/' + encodeURIComponent(runId) + '/events?cursor=0', undefined, (ev) => {
            if (gen !== current.gen) return;
            if (!started) {
                $('transcript').querySelector('.msg.empty')?.remove();
                $('transcript').append(bubble.li);
                current.followLi = bubble.li;
                current.followGen = gen;
                started = true;
            }
            if (ev.type === 'done' || ev.type === 'error') endEvent = ev;
            applyEvent(bubble, ev);
            scrollTranscriptEnd();
        }, { signal: ctl.signal });
    } catch (e) {
        if (current.followLi === bubble.li) current.followLi = null;
        if (e.name === 'AbortError') return;
        if (e.code === 'run_not_found') {
            // a run of /api/chat (not a background run) has no event log: watch the status
            bubble.li.remove();
            pollUntilIdle(current.sid, gen);
            return;
        }
        live.textContent = describeError(e);
        return;
    }
    if (current.followLi === bubble.li) current.followLi = null;
    if (gen !== current.gen) return;
    current.follow = null;
    live.hidden = true;
    if (endEvent && endEvent.type === 'error') $('chat-error').textContent = describeError(endEvent);
    await refreshSession(gen);
}

function pollUntilIdle(sid, gen) {
    const live = $('live-run');
    live.hidden = false;
    live.textContent = 'A run is in progress in this session…';
    clearTimeout(current.pollTimer);
    const tick = async () => {
        if (gen !== current.gen) return;
        try {
            const s = await api('GET', 'api/v1/chat/sessions/' + encodeURIComponent(sid));
            if (gen !== current.gen) return;
            if (s.status !== 'running') {
                live.hidden = true;
                await refreshSession(gen);
                return;
            }
        } catch {
            /* try again */
        }
        current.pollTimer = setTimeout(tick, 1000);
    };
    current.pollTimer = setTimeout(tick, 500);
}

async function refreshSession(gen) {
    if (!current.sid || gen !== current.gen) return;
    try {
        const s = await api('GET', 'api/v1/chat/sessions/' + encodeURIComponent(current.sid));
        if (gen !== current.gen) return;
        renderSummary(s);
        await loadTranscript(current.sid);
        loadTokens(current.sid);
        scrollTranscriptEnd();
        // e.g. a stopped run whose cancellation the server is still recording
        if (s.status === 'running' && !current.follow && !current.chat) pollUntilIdle(current.sid, gen);
        if (list.rows.has(s.session_id)) updateRow(s);
        else loadList();
    } catch (e) {
        $('session-msg').textContent = describeError(e);
    }
}

// ---- chat ------------------------------------------------------------------------------

// Answers stopped mid-stream, by session id: [{after, li}]. The server stores the cancelled
// turn without the text that had arrived, so the page keeps it, after the message that was
// last when it stopped, for as long as the page is open.
const stoppedAnswers = new Map();

function keepStopped(sid, li) {
    const mids = [...$('transcript').querySelectorAll('li[data-mid]')].map((e) => e.dataset.mid).filter((m) => m !== '');
    const kept = stoppedAnswers.get(sid) || [];
    kept.push({ after: mids.length ? mids[mids.length - 1] : null, li });
    stoppedAnswers.set(sid, kept);
    placeStopped(sid);
}

function placeStopped(sid) {
    for (const k of stoppedAnswers.get(sid) || []) {
        const anchor = k.after === null ? null : $('transcript').querySelector('li[data-mid="' + CSS.escape(k.after) + '"]');
        if (anchor) anchor.after(k.li);
        else if (k.after === null && !k.li.isConnected) $('transcript').append(k.li);
    }
}

// Put `text` back into the empty message box (a send that failed keeps what was typed).
function restoreInput(text) {
    const input = $('chat-input');
    if (!input.value) input.value = text;
}

function setBusy(busy) {
    $('send-btn').disabled = busy || !!(current.summary && current.summary.archived);
    $('stop-btn').hidden = !busy;
    $('chat-bg').disabled = busy;
}

async function sendChat(text) {
    busy(1);
    try {
        await sendChatInner(text);
    } finally {
        busy(-1);
    }
}

// One chunk of /api/chat's stream, applied for the send `c` (see sendChatInner).
function chatChunk(c, d) {
    if (d === '[DONE]' || typeof d !== 'object') return;
    if (d.error) {
        c.failure = new ApiError(0, d.error.code, d.error.message);
        return;
    }
    if (d.session_id && !current.sid && c.gen === current.gen) {
        current.sid = d.session_id;
        history.replaceState(null, '', '#/s/' + encodeURIComponent(d.session_id));
        $('s-title').textContent = c.text.slice(0, 80);
        showView('session');
    }
    if (!c.listed && d.session_id) {
        // the list shows the run as it goes (and polls it until it ends)
        c.listed = true;
        api('GET', 'api/v1/chat/sessions/' + encodeURIComponent(d.session_id)).then((s) => {
            if (list.rows.has(s.session_id)) updateRow(s);
            else loadList();
            scheduleListPoll();
        }).catch(() => {});
    }
    if (d.svc_event) applyEvent(c.bubble, d.svc_event);
    else {
        const delta = d.choices && d.choices[0] && d.choices[0].delta;
        if (delta && typeof delta.content === 'string' && delta.content) {
            applyEvent(c.bubble, { type: 'delta', text: delta.content });
        }
    }
    scrollTranscriptEnd();
}

// After a send that failed or was stopped: say so, and keep what a person typed or saw
// (the text goes back into the box; a stopped answer keeps what had arrived). Returns
// whether part of an answer had arrived.
function failedChat(c) {
    const { bubble, failure } = c;
    const partial = !!(bubble.text || bubble.body.querySelector('details'));
    if (failure.name === 'AbortError') {
        bubble.li.classList.add('stopped');
        bubble.li.append(h('p', { class: 'notice', text: 'Stopped: the run was cancelled. ' +
            (partial ? 'What had arrived is kept on this page; the server does not store it.' : '') }));
    } else {
        $('chat-error').textContent = describeError(failure);
        if (c.gen === current.gen) restoreInput(c.text);
    }
    if (!partial) bubble.li.remove();
    if (!current.sid && c.gen === current.gen) c.userItem.remove(); // no session: nothing was stored
    return partial;
}

async function sendChatInner(text) {
    const ctl = new AbortController();
    current.chat = ctl;
    const gen = current.gen;
    const loading = current.tloading > 0;
    current.tgen++; // a transcript load still in flight must not remove this turn
    setBusy(true);
    $('chat-error').textContent = '';
    $('transcript').querySelector('.msg.empty')?.remove();
    const userItem = messageItem('user', new Date().toISOString(), h('div', { class: 'msg-body' }, renderMarkdown(text)), '');
    $('transcript').append(userItem);
    const bubble = liveBubble();
    $('transcript').append(bubble.li);
    scrollTranscriptEnd();
    const body = {
        messages: [{ role: 'user', content: text }],
        stream: true,
        stream_options: { include_usage: true },
        metadata: { event_format: 'svc.v2', channel: 'dashboard', locale: navigator.language || 'en' },
    };
    if (current.sid) body.session_id = current.sid;
    const c = { text, gen, bubble, userItem, listed: false, failure: null };
    try {
        await stream('POST', 'api/chat', body, (d) => chatChunk(c, d), { signal: ctl.signal });
    } catch (e) {
        c.failure = e;
    }
    current.chat = null;
    setBusy(false);
    bubble.li.classList.remove('streaming');
    bubble.li.removeAttribute('aria-busy');
    const failure = c.failure;
    const stopped = failure && failedChat(c) && failure.name === 'AbortError';
    if (failure && failure.code === 'session_busy' && failure.status === 409) {
        // Refused before anything was stored: the transcript stays as it is (a run another
        // tab started may be streaming into it), and the text goes back into the box to be
        // sent once that run ends.
        userItem.remove();
        if (gen !== current.gen) return;
        $('chat-input').focus();
        // a transcript load this send made stale was dropped: load it again
        if (loading && current.sid) await loadTranscript(current.sid).catch(() => {});
        return;
    }
    if (gen === current.gen && current.sid) {
        // The server stored the turn (or the cancellation): show the stored transcript.
        await refreshSession(gen);
        if (stopped && gen === current.gen) keepStopped(current.sid, bubble.li);
    }
    if (gen === current.gen) $('chat-input').focus();
}

async function startBackgroundRun(text) {
    const gen = current.gen;
    $('chat-error').textContent = '';
    const body = { messages: [{ role: 'user', content: text }], metadata: { channel: 'dashboard' } };
    if (current.sid) body.session_id = current.sid;
    try {
        const r = await api('POST', 'api/chat/runs', body);
        if (gen !== current.gen) return;
        toast('Run ' + r.run_id + ' started; it can be followed at #/run/' + r.run_id);
        location.hash = '#/run/' + encodeURIComponent(r.run_id);
    } catch (e) {
        $('chat-error').textContent = describeError(e);
        if (gen === current.gen) restoreInput(text);
    }
}

$('chat-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const input = $('chat-input');
    const text = input.value.trim();
    if (!text || current.chat) return;
    input.value = '';
    if ($('chat-bg').checked) startBackgroundRun(text);
    else sendChat(text);
});
$('chat-input').addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        $('chat-form').requestSubmit();
    }
});
$('stop-btn').addEventListener('click', () => {
    if (current.chat) current.chat.abort(); // closing the stream cancels the run
});
$('new-session').addEventListener('click', () => {
    if (location.hash === '#/' || location.hash === '') route();
    else location.hash = '#/';
});

// ---- rename, archive -------------------------------------------------------------------

$('rename-btn').addEventListener('click', () => {
    $('rename-form').hidden = false;
    $('rename-input').value = current.summary ? current.summary.title || '' : '';
    $('rename-input').focus();
    $('rename-input').select();
});
$('rename-cancel').addEventListener('click', () => {
    $('rename-form').hidden = true;
    $('rename-btn').focus();
});
$('rename-form').addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape') $('rename-cancel').click();
});
$('rename-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const title = $('rename-input').value.trim();
    if (!title || !current.sid) return;
    try {
        const s = await api('PATCH', 'api/v1/chat/sessions/' + encodeURIComponent(current.sid), { title });
        renderSummary(s);
        updateRow(s);
        $('rename-form').hidden = true;
        $('rename-btn').focus();
        toast('Renamed.');
    } catch (e) {
        $('session-msg').textContent = describeError(e);
    }
});
$('archive-btn').addEventListener('click', async () => {
    const s = current.summary;
    if (!s) return;
    const action = s.archived ? 'unarchive' : 'archive';
    try {
        await api('POST', 'api/v1/chat/sessions/' + encodeURIComponent(s.session_id) + '/' + action);
        const fresh = await api('GET', 'api/v1/chat/sessions/' + encodeURIComponent(s.session_id));
        renderSummary(fresh);
        toast(action === 'archive' ? 'Archived: hidden from the default list.' : 'Unarchived.');
        loadList();
    } catch (e) {
        $('session-msg').textContent = describeError(e);
    }
});

$('pin-btn').addEventListener('click', () => {
    const s = current.summary;
    if (s) patchSession({ pinned: !s.pinned }, s.pinned ? 'Unpinned.' : 'Pinned: listed first.');
});
$('tag-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const t = $('tag-input').value.trim();
    const s = current.summary;
    if (!t || !s) return;
    const tags = (s.tags || []).filter((x) => x !== t).concat([t]);
    if (await patchSession({ tags }, 'Tag ' + t + ' added.')) $('tag-input').value = '';
});
$('delete-btn').addEventListener('click', () => {
    const s = current.summary;
    if (!s) return;
    $('delete-title').textContent = 'Delete \u201C' + (s.title || s.session_id) + '\u201D?';
    $('delete-dialog').returnValue = '';
    $('delete-dialog').showModal();
});
$('delete-dialog').addEventListener('close', async () => {
    const s = current.summary;
    if ($('delete-dialog').returnValue !== 'delete' || !s) return;
    try {
        await api('DELETE', 'api/v1/chat/sessions/' + encodeURIComponent(s.session_id));
        toast('Deleted \u201C' + (s.title || s.session_id) + '\u201D.');
        list.selected.delete(s.session_id);
        updateSelection();
        loadList();
        location.hash = '#/';
    } catch (e) {
        $('session-msg').textContent = describeError(e);
    }
});

// ---- status view -----------------------------------------------------------------------

function kv(rows) {
    const dl = h('dl', { class: 'kv' });
    for (const [k, v] of rows) dl.append(h('dt', { text: k }), h('dd', { text: String(v ?? '—') }));
    return dl;
}

// Turns and errors a minute over the last hour, from /api/metrics (svc_turns_per_minute and
// svc_run_errors_per_minute, minutes_ago 0..59): one bar a minute, the oldest on the left.
function perMinute(text, name) {
    const v = new Array(60).fill(0);
    const re = new RegExp('^' + name + '\\{minutes_ago="(\\d+)"\\} (\\d+)$', 'gm');
    for (const m of text.matchAll(re)) if (+m[1] < 60) v[59 - +m[1]] = +m[2];
    return v;
}

function activityChart(text) {
    const turns = perMinute(text, 'svc_turns_per_minute');
    const errors = perMinute(text, 'svc_run_errors_per_minute');
    const sum = (a) => a.reduce((x, y) => x + y, 0);
    const max = Math.max(1, ...turns);
    const NS = 'http://www.w3.org/2000/svg';
    const svg = document.createElementNS(NS, 'svg');
    const label = sum(turns) + ' turns and ' + sum(errors) + ' errors in the last hour';
    svg.setAttribute('viewBox', '0 0 600 100');
    svg.setAttribute('class', 'chart');
    svg.setAttribute('role', 'img');
    svg.setAttribute('aria-label', label);
    turns.forEach((t, i) => {
        for (const [n, cls] of [[t, 'bar'], [errors[i], 'bar-error']]) {
            if (!n) continue;
            const r = document.createElementNS(NS, 'rect');
            const hgt = Math.max(1, Math.round((n / max) * 96));
            r.setAttribute('x', String(i * 10 + 1));
            r.setAttribute('width', '8');
            r.setAttribute('y', String(100 - hgt));
            r.setAttribute('height', String(hgt));
            r.setAttribute('class', cls);
            const tip = document.createElementNS(NS, 'title');
            tip.textContent = n + (cls === 'bar' ? ' turns' : ' errors') + ', ' + (59 - i) + ' min ago';
            r.append(tip);
            svg.append(r);
        }
    });
    return h('div', {}, svg, h('p', { class: 'muted', text: label + ' (peak ' + max + ' a minute).' }));
}

async function loadStatus() {
    showView('status');
    document.title = 'Status · svc';
    $('forget-token').hidden = !getToken();
    $('status-title').focus({ preventScroll: true });
    const fill = async (id, path, render) => {
        const box = $(id);
        box.replaceChildren(h('p', { class: 'muted', text: 'Loading…' }));
        try {
            const r = await (typeof path === 'string' ? api('GET', path) : path).catch((e) => {
                // health answers 503 with its body when degraded
                if (e instanceof ApiError && e.status === 503) return { status: 'degraded', reason: e.message };
                throw e;
            });
            box.replaceChildren(render(r));
        } catch (e) {
            box.replaceChildren(h('p', { class: 'error', text: describeError(e) }));
        }
    };
    fill('st-health', 'api/health', (r) => kv([
        ['Status', r.status], ['Version', r.version], ['Uptime', r.uptime_s !== undefined ? r.uptime_s + ' s' : undefined],
        ['Master pid', r.pid], ['Sessions', r.sessions ? (r.sessions.enabled ? 'enabled, ' + r.sessions.provider : 'disabled') : undefined],
        ['Root writable', r.sessions ? (r.sessions.root_writable ? 'yes' : 'no') : undefined],
        ['Model', r.model ? r.model.provider + ' / ' + r.model.name : undefined],
        ...(r.reason ? [['Reason', r.reason]] : [])]));
    const act = $('st-activity');
    apiText('api/metrics').then((t) => act.replaceChildren(activityChart(t)))
        .catch((e) => act.replaceChildren(h('p', { class: 'muted', text: describeError(e) })));
    fill('st-jobs', 'api/jobs', (r) => {
        if (!r.jobs.length) return h('p', { class: 'muted', text: 'No jobs configured.' });
        const t = h('table', {}, h('thead', {}, h('tr', {}, ...['Job', 'Schedule', 'Session', 'Next run', 'Last run'].map((x) => h('th', { scope: 'col', text: x })))));
        const tb = h('tbody');
        for (const j of r.jobs) {
            tb.append(h('tr', {}, h('td', { text: j.id + (j.enabled ? '' : ' (disabled)') }), h('td', {}, h('code', { text: j.schedule })),
                h('td', {}, h('a', { href: '#/s/' + encodeURIComponent(j.session_id), text: j.session_id })),
                h('td', { text: j.next_run_at ? new Date(j.next_run_at).toLocaleString() : '—' }),
                h('td', { text: j.last_run_at ? timeAgo(j.last_run_at) + ' (' + (j.last_status || '?') + ')' : 'never' })));
        }
        t.append(tb);
        return t;
    });
    const ext = api('GET', 'api/extensions'); // one request (it may start MCP servers) for both cards
    fill('st-ext', ext, (r) => {
        if (!r.extensions.length) return h('p', { class: 'muted', text: 'No tools.' });
        const ul = h('ul', { class: 'ext' });
        for (const x of r.extensions) {
            ul.append(h('li', {}, h('code', { text: x.name }), ' ', h('span', { class: 'badge', text: x.builtin ? 'built in' : x.kind }),
                x.enabled ? '' : h('span', { class: 'badge st-error', text: 'disabled' }), ' ', x.description || ''));
        }
        return ul;
    });
    fill('st-mcp', ext, (r) => {
        const servers = r.mcp_servers || [];
        if (!servers.length) return h('p', { class: 'muted', text: 'No MCP servers configured (mcp_servers in agents.yaml).' });
        const t = h('table', {}, h('thead', {}, h('tr', {}, ...['Server', 'Transport', 'State', 'Tools'].map((x) => h('th', { scope: 'col', text: x })))));
        const tb = h('tbody');
        const cls = { ready: 'st-idle', failed: 'st-error' };
        for (const m of servers) {
            const tools = m.tools.map((x) => h('code', { title: x.description || '', text: m.name + '__' + x.name }));
            tb.append(h('tr', {}, h('td', {}, h('code', { text: m.name })), h('td', { text: m.transport }),
                h('td', {}, h('span', { class: 'badge ' + (cls[m.state] || ''), text: m.state }),
                    m.last_error ? h('p', { class: 'error', text: m.last_error }) : null),
                h('td', {}, ...(tools.length ? tools.flatMap((x, i) => (i ? [' ', x] : [x])) : [h('span', { class: 'muted', text: 'none' })]))));
        }
        t.append(tb);
        return t;
    });
    const cfg = $('st-config');
    try {
        const c = await api('GET', 'api/config');
        cfg.textContent = JSON.stringify(c, null, 2);
    } catch (e) {
        cfg.textContent = describeError(e);
    }
}
$('follow-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const id = $('follow-input').value.trim();
    if (id) location.hash = '#/run/' + encodeURIComponent(id);
});
$('forget-token').addEventListener('click', () => {
    setToken('');
    toast('The access token was forgotten.');
    $('forget-token').hidden = true;
});

// ---- routing ---------------------------------------------------------------------------

async function openRun(runId) {
    showView('session');
    try {
        const r = await api('GET', 'api/chat/runs/' + encodeURIComponent(runId));
        await openSession(r.session_id, r.status === 'running' ? runId : null);
        if (r.status !== 'running') {
            $('session-msg').textContent = 'Run ' + runId + ' has finished (' + r.status + ').' +
                (r.error ? ' ' + describeError(r.error) : '');
        }
    } catch (e) {
        $('s-title').textContent = 'Run ' + runId;
        $('transcript').replaceChildren();
        $('session-msg').textContent = describeError(e);
    }
}

let listLoaded = false;
function route() {
    const hash = location.hash || '#/';
    let m;
    if (!listLoaded) {
        listLoaded = true;
        loadMe().finally(() => loadList()); // the list's owner column needs to know who asks
    }
    if ((m = /^#\/s\/([^?]+)(?:\?m=(.+))?$/.exec(hash))) {
        const sid = decodeURIComponent(m[1]);
        openSession(sid, undefined, m[2] === undefined ? undefined : decodeURIComponent(m[2]));
    } else if ((m = /^#\/run\/(.+)$/.exec(hash))) {
        openRun(decodeURIComponent(m[1]));
    } else if (hash === '#/status') {
        stopFollowing();
        loadStatus();
    } else {
        openSession(null); // the landing view (#/, #/new): a message box, ready to type
    }
}
window.addEventListener('hashchange', route);
// "3 minutes ago" stays true while the page is open
setInterval(() => {
    for (const t of document.querySelectorAll('time[datetime]')) {
        const v = t.getAttribute('datetime');
        if (v) t.textContent = timeAgo(v);
    }
}, 30000);
onAuthRequired(() => {
    listLoaded = false;
});
route();
