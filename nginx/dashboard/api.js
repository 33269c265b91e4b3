// HTTP access to the svc API (SPEC section 4) for the dashboard.
//
// URLs are relative to the page ("api/..."), so a dashboard served under a prefix (e.g.
// server.base_path /svc and the page at /svc/) talks to the API under the same prefix.
// The bearer token lives in sessionStorage (key "svc.token") and goes only into the
// Authorization header, never into a URL. Streams are read with fetch() (EventSource
// cannot send headers).

const TOKEN_KEY = 'svc.token';

export function getToken() {
    try {
        return sessionStorage.getItem(TOKEN_KEY) || '';
    } catch {
        return '';
    }
}

export function setToken(t) {
    try {
        if (t) sessionStorage.setItem(TOKEN_KEY, t);
        else sessionStorage.removeItem(TOKEN_KEY);
    } catch {
        /* storage disabled: the token lives as long as this page */
    }
    memoryToken = t || '';
}

let memoryToken = '';

function token() {
    return getToken() || memoryToken;
}

// An API failure: status (0 for a network failure), code, message, retryAfter.
export class ApiError extends Error {
    constructor(status, code, message, extra = {}) {
        super(message);
        this.status = status;
        this.code = code;
        Object.assign(this, extra);
    }
}

// Listeners for "the server wants a token" (401): the app shows its token dialog.
const authListeners = [];
export function onAuthRequired(fn) {
    authListeners.push(fn);
}

export function apiUrl(path) {
    return new URL(path.replace(/^\//, ''), document.baseURI).href;
}

function headers(extra) {
    const h = { Accept: 'application/json', ...extra };
    const t = token();
    if (t) h.Authorization = 'Bearer ' + t;
    return h;
}

async function errorFrom(res) {
    let body = null;
    try {
        body = await res.json();
    } catch {
        /* not JSON: nginx's own page */
    }
    const e = body && body.error ? body.error : {};
    const err = new ApiError(res.status, e.code || 'http_' + res.status,
        e.message || res.statusText || 'request failed',
        { retryAfter: res.headers.get('Retry-After'), type: e.type });
    if (res.status === 401) authListeners.forEach((fn) => fn(err));
    return err;
}

// fetch() with auth; network failures become ApiError(0, 'network').
async function send(method, path, body, opts = {}) {
    const init = { method, headers: headers(opts.headers), signal: opts.signal };
    if (body !== undefined) {
        init.body = JSON.stringify(body);
        init.headers['Content-Type'] = 'application/json';
    }
    let res;
    try {
        res = await fetch(apiUrl(path), init);
    } catch (e) {
        if (e && e.name === 'AbortError') throw e;
        throw new ApiError(0, 'network', 'The server could not be reached.');
    }
    if (!res.ok) throw await errorFrom(res);
    return res;
}

// Text request (GET /api/metrics): resolves to the body, rejects with ApiError.
export async function apiText(path, opts) {
    const res = await send('GET', path, undefined, opts);
    return res.text();
}

// JSON request: resolves to the decoded body, rejects with ApiError.
export async function api(method, path, body, opts) {
    const res = await send(method, path, body, opts);
    return res.json();
}

// A request whose answer is a file: resolves to {blob, filename, type}.
export async function download(method, path, body, opts) {
    const res = await send(method, path, body, { ...opts, headers: { Accept: 'application/gzip, application/json' } });
    const type = res.headers.get('Content-Type') || '';
    if (type.startsWith('application/json')) {
        // the server wrote the export somewhere instead of sending it
        return { json: await res.json() };
    }
    const cd = res.headers.get('Content-Disposition') || '';
    const m = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(cd);
    return { blob: await res.blob(), filename: m ? decodeURIComponent(m[1]) : 'svc-export.tar.gz', type };
}

// Read a server-sent event stream; calls onData(payload) with each `data:` payload
// decoded as JSON (or the raw string, e.g. "[DONE]"). Resolves when the stream ends.
export async function stream(method, path, body, onData, opts = {}) {
    const res = await send(method, path, body, { ...opts, headers: { Accept: 'text/event-stream' } });
    if (!res.body) return;
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let k;
        while ((k = buf.search(/\r?\n\r?\n/)) >= 0) {
            const block = buf.slice(0, k);
            buf = buf.slice(k).replace(/^\r?\n\r?\n/, '');
            const data = block.split(/\r?\n/).filter((l) => l.startsWith('data:'))
                .map((l) => l.slice(5).replace(/^ /, '')).join('\n');
            if (!data) continue; // a comment (": ping")
            let v = data;
            try {
                v = JSON.parse(data);
            } catch {
                /* keep the string */
            }
            onData(v);
        }
    }
}

// The words a person reads for an API error (codes are shown only as a detail).
export function describeError(e) {
    if (!e) return 'Something went wrong.';
    if (e.name === 'AbortError') return 'Stopped.';
    switch (e.code) {
        case 'network':
            return 'The server could not be reached. Check that svc is running.';
        case 'missing_token':
            return 'This server needs an access token.';
        case 'invalid_token':
            return 'The access token was not accepted.';
        case 'session_busy':
            return 'This session is busy with another run. Try again when it has finished' +
                (e.retryAfter ? ' (in about ' + e.retryAfter + ' s).' : '.');
        case 'session_archived':
            return 'This session is archived. Unarchive it to continue the conversation.';
        case 'session_not_found':
            return 'This session does not exist (any more).';
        case 'sessions_disabled':
            return 'Sessions are disabled on this server (sessions.enabled is false).';
        case 'upstream_error':
            return 'The model server failed: ' + e.message;
        case 'upstream_timeout':
            return 'The model server did not answer in time.';
        case 'cancelled':
            return 'The run was cancelled.';
        case 'run_timeout':
            return 'The run took too long and was stopped.';
        case 'run_not_found':
            return 'No such run (records are kept for 7 days).';
        case 'not_implemented':
            return 'This server cannot do that yet: ' + e.message + '.';
        case 'export_dir_forbidden':
            return 'The export directory is not allowed by the server configuration.';
        case 'body_too_large':
            return 'The message is too long for this server.';
        default:
            if (e.status >= 500) return 'The server failed: ' + (e.message || 'internal error') + '.';
            return e.message || 'The request failed.';
    }
}
