// A small Markdown renderer that builds DOM nodes directly.
//
// Safety contract: message text only ever reaches the page through
// document.createTextNode / textContent. No HTML in a message is interpreted (it shows as
// text), no attribute but `href` is set from message content, and `href` is set only to
// absolute http:, https: or mailto: URLs (checked with the URL parser after the text is
// decoded). Images are never loaded: ![alt](url) becomes a link (when the URL is allowed)
// or plain text.
//
// Supported: fenced code blocks (``` or ~~~, optional language), indented code blocks,
// ATX headings, block quotes, ordered and unordered lists (one level of nesting by
// indentation), horizontal rules, paragraphs with hard line breaks; inline code,
// **strong**, *emphasis*, ~~strike~~, [links](url), <autolinks> and bare http(s) URLs.

const ALLOWED_SCHEMES = new Set(['http:', 'https:', 'mailto:']);

// The URL to put in href, or null when it is not an absolute http(s)/mailto URL.
export function safeUrl(raw) {
    if (typeof raw !== 'string') return null;
    const s = raw.trim();
    // Control characters and whitespace inside a URL are how scheme checks get fooled
    // ("java\nscript:"): refuse them outright.
    if (s === '' || /[\u0000-\u0020\u007f-\u009f]/.test(s)) return null;
    let u;
    try {
        u = new URL(s);
    } catch {
        return null;
    }
    if (!ALLOWED_SCHEMES.has(u.protocol)) return null;
    // Only accept what the text actually says: the scheme must be spelled out, so a
    // relative or protocol-relative URL never gains one.
    if (!/^(https?:\/\/|mailto:)/i.test(s)) return null;
    return u.href;
}

function el(tag, cls) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    return e;
}

function link(text, url) {
    const href = safeUrl(url);
    if (!href) return null;
    const a = el('a');
    a.href = href;
    a.rel = 'noopener noreferrer nofollow';
    a.target = '_blank';
    a.textContent = text;
    return a;
}

// ---- inline ---------------------------------------------------------------------------

// Find the closing delimiter `d` in s from index i, not directly after an opening one.
// `miss` remembers, per delimiter, a start from which no closer exists (a later start
// finds none either), so a text full of unmatched delimiters stays linear.
function findClose(s, d, i, miss) {
    if (miss.has(d) && i >= miss.get(d)) return -1;
    for (let j = i; j <= s.length - d.length; j++) {
        if (s[j] === '\\') {
            j++;
            continue;
        }
        if (s.startsWith(d, j) && j > i) return j;
    }
    miss.set(d, i);
    return -1;
}

// s.indexOf(needle, from) with the same memory of misses.
function indexOfCached(s, needle, from, miss) {
    const key = 'idx:' + needle;
    if (miss.has(key) && from >= miss.get(key)) return -1;
    const k = s.indexOf(needle, from);
    if (k < 0) miss.set(key, from);
    return k;
}

const MAX_LINK_TEXT = 500;   // a link's text is looked for this far at most
const MAX_INLINE_DEPTH = 12; // nesting of emphasis/links beyond this renders as text

// Match "[text](url)" at s[i] === '['; returns {text, url, end} or null.
function matchLink(s, i, miss) {
    let depth = 0;
    let j = i;
    const stop = Math.min(s.length, i + MAX_LINK_TEXT);
    for (; j < stop; j++) {
        const c = s[j];
        if (c === '\\') {
            j++;
            continue;
        }
        if (c === '[') depth++;
        else if (c === ']' && --depth === 0) break;
    }
    if (j >= stop || s[j + 1] !== '(') return null;
    const close = indexOfCached(s, ')', j + 2, miss);
    if (close < 0) return null;
    let url = s.slice(j + 2, close).trim();
    // optional title: [t](url "title") -> drop the title
    const sp = url.search(/\s/);
    if (sp >= 0) url = url.slice(0, sp);
    if (url.startsWith('<') && url.endsWith('>')) url = url.slice(1, -1);
    return { text: s.slice(i + 1, j), url, end: close + 1 };
}

const BARE_URL = /(https?:\/\/[^\s<>"'`]+[^\s<>"'`.,;:!?)\]}])/iy;

// Append inline content of `s` to `parent`.
export function renderInline(s, parent, depth = 0) {
    if (depth > MAX_INLINE_DEPTH) {
        parent.appendChild(document.createTextNode(s));
        return;
    }
    const miss = new Map();
    let buf = '';
    const flush = () => {
        if (buf) parent.appendChild(document.createTextNode(buf));
        buf = '';
    };
    let i = 0;
    while (i < s.length) {
        const c = s[i];
        if (c === '\\' && i + 1 < s.length && /[\\`*_{}[\]()#+\-.!~<>|]/.test(s[i + 1])) {
            buf += s[i + 1];
            i += 2;
            continue;
        }
        if (c === '`') {
            let n = 1;
            while (s[i + n] === '`') n++;
            const fence = '`'.repeat(n);
            const end = indexOfCached(s, fence, i + n, miss);
            if (end > 0) {
                flush();
                const code = el('code');
                code.textContent = s.slice(i + n, end).replace(/^ (.*) $/, '$1');
                parent.appendChild(code);
                i = end + n;
                continue;
            }
            buf += fence;
            i += n;
            continue;
        }
        if ((c === '*' || c === '_' || c === '~') && s[i + 1] === c) {
            const d = c + c;
            const end = findClose(s, d, i + 2, miss);
            if (end > 0 && !/\s/.test(s[i + 2])) {
                flush();
                const node = el(c === '~' ? 's' : 'strong');
                renderInline(s.slice(i + 2, end), node, depth + 1);
                parent.appendChild(node);
                i = end + 2;
                continue;
            }
        } else if ((c === '*' || c === '_') && s[i + 1] && !/\s/.test(s[i + 1])) {
            // `_` only at a word boundary (snake_case stays as it is)
            const before = i > 0 ? s[i - 1] : ' ';
            if (c === '*' || !/[A-Za-z0-9]/.test(before)) {
                const end = findClose(s, c, i + 1, miss);
                const after = end > 0 ? s[end + 1] || ' ' : ' ';
                if (end > 0 && !/\s/.test(s[end - 1]) && (c === '*' || !/[A-Za-z0-9]/.test(after))) {
                    flush();
                    const em = el('em');
                    renderInline(s.slice(i + 1, end), em, depth + 1);
                    parent.appendChild(em);
                    i = end + 1;
                    continue;
                }
            }
        }
        if (c === '!' && s[i + 1] === '[') {
            const m = matchLink(s, i + 1, miss);
            if (m) {
                flush();
                // Images are not loaded (nothing is fetched from outside): name them.
                const label = 'image: ' + (m.text || m.url);
                const a = link(label, m.url);
                parent.appendChild(a || document.createTextNode(label));
                i = m.end;
                continue;
            }
        }
        if (c === '[') {
            const m = matchLink(s, i, miss);
            if (m) {
                flush();
                const a = link('', m.url);
                if (a) {
                    renderInline(m.text, a, depth + 1);
                    parent.appendChild(a);
                } else {
                    // A refused URL: keep the words, drop the link.
                    renderInline(m.text, parent, depth + 1);
                }
                i = m.end;
                continue;
            }
        }
        if (c === '<') {
            const end = indexOfCached(s, '>', i + 1, miss);
            if (end > 0) {
                const inner = s.slice(i + 1, end);
                const a = /^(https?:\/\/|mailto:)\S+$/i.test(inner) ? link(inner, inner) : null;
                if (a) {
                    flush();
                    parent.appendChild(a);
                    i = end + 1;
                    continue;
                }
            }
        }
        if ((c === 'h' || c === 'H') && (i === 0 || /[\s(]/.test(s[i - 1]))) {
            BARE_URL.lastIndex = i;
            const m = BARE_URL.exec(s);
            if (m) {
                const a = link(m[1], m[1]);
                if (a) {
                    flush();
                    parent.appendChild(a);
                    i += m[1].length;
                    continue;
                }
            }
        }
        buf += c;
        i++;
    }
    flush();
}

// ---- blocks ---------------------------------------------------------------------------

const RE_FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)/;
const RE_HEADING = /^ {0,3}(#{1,6})(?:\s+(.*?))?\s*#*\s*$/;
const RE_HR = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
const RE_QUOTE = /^ {0,3}> ?(.*)$/;
const RE_UL = /^( {0,6})([-*+])\s+(.*)$/;
const RE_OL = /^( {0,6})(\d{1,9})[.)]\s+(.*)$/;

function isBlockStart(line) {
    return RE_FENCE.test(line) || RE_HEADING.test(line) || RE_HR.test(line) ||
        RE_QUOTE.test(line) || RE_UL.test(line) || RE_OL.test(line);
}

function renderParagraph(lines, parent) {
    const p = el('p');
    lines.forEach((line, k) => {
        if (k > 0) {
            // two trailing spaces or a backslash: hard break; else a soft break
            if (/( {2,}|\\)$/.test(lines[k - 1])) p.appendChild(el('br'));
            else p.appendChild(document.createTextNode('\n'));
        }
        renderInline(line.replace(/( {2,}|\\)$/, '').trim(), p);
    });
    parent.appendChild(p);
}

function renderList(lines, start, parent, depth) {
    const first = RE_UL.exec(lines[start]) || RE_OL.exec(lines[start]);
    const ordered = !RE_UL.test(lines[start]);
    const indent = first[1].length;
    const list = el(ordered ? 'ol' : 'ul');
    if (ordered) {
        const n = parseInt(first[2], 10);
        if (n !== 1) list.start = n;
    }
    let i = start;
    let item = null;
    let itemLines = [];
    const finishItem = () => {
        if (!item) return;
        renderBlocks(itemLines, item, depth + 1);
        // a single paragraph in an item renders without the <p>
        if (item.childNodes.length === 1 && item.firstChild.tagName === 'P') {
            const p = item.firstChild;
            while (p.firstChild) item.appendChild(p.firstChild);
            item.removeChild(p);
        }
        list.appendChild(item);
    };
    while (i < lines.length) {
        const line = lines[i];
        const m = ordered ? RE_OL.exec(line) : RE_UL.exec(line);
        if (m && m[1].length === indent) {
            finishItem();
            item = el('li');
            itemLines = [m[3]];
            i++;
            continue;
        }
        if (line.trim() === '') {
            // a blank line ends the list unless the next line continues it (indented)
            const next = lines[i + 1];
            if (next !== undefined && /^\s{2,}\S/.test(next)) {
                itemLines.push('');
                i++;
                continue;
            }
            break;
        }
        if (/^\s+\S/.test(line) && line.search(/\S/) > indent) {
            itemLines.push(line.slice(Math.min(line.search(/\S/), indent + 2)));
            i++;
            continue;
        }
        if (isBlockStart(line)) break;
        // lazy continuation of the item's paragraph
        itemLines.push(line.trim());
        i++;
    }
    finishItem();
    parent.appendChild(list);
    return i;
}

function renderBlocks(lines, parent, depth) {
    if (depth > 8) {
        // deep nesting: plain text, no more recursion
        const pre = el('pre');
        pre.textContent = lines.join('\n');
        parent.appendChild(pre);
        return;
    }
    let i = 0;
    while (i < lines.length) {
        const line = lines[i];
        if (line.trim() === '') {
            i++;
            continue;
        }
        let m = RE_FENCE.exec(line);
        if (m) {
            const fence = m[1];
            const lang = m[2];
            const body = [];
            i++;
            while (i < lines.length && !new RegExp('^ {0,3}' + fence[0] + '{' + fence.length + ',}\\s*$').test(lines[i])) {
                body.push(lines[i]);
                i++;
            }
            i++; // closing fence (or end of text)
            const pre = el('pre', 'code');
            const code = el('code');
            if (lang && /^[A-Za-z0-9_+.#-]{1,32}$/.test(lang)) {
                code.dataset.lang = lang;
                pre.dataset.lang = lang;
            }
            code.textContent = body.join('\n');
            pre.appendChild(code);
            parent.appendChild(pre);
            continue;
        }
        if (/^( {4}|\t)/.test(line)) {
            const body = [];
            while (i < lines.length && (/^( {4}|\t)/.test(lines[i]) || lines[i].trim() === '')) {
                body.push(lines[i].replace(/^( {4}|\t)/, ''));
                i++;
            }
            while (body.length && body[body.length - 1].trim() === '') body.pop();
            const pre = el('pre', 'code');
            const code = el('code');
            code.textContent = body.join('\n');
            pre.appendChild(code);
            parent.appendChild(pre);
            continue;
        }
        m = RE_HEADING.exec(line);
        if (m) {
            // h1/h2 inside a message would compete with the page's own headings
            const h = el('h' + Math.min(6, m[1].length + 2));
            renderInline(m[2] || '', h);
            parent.appendChild(h);
            i++;
            continue;
        }
        if (RE_HR.test(line)) {
            parent.appendChild(el('hr'));
            i++;
            continue;
        }
        if (RE_QUOTE.test(line)) {
            const body = [];
            while (i < lines.length && lines[i].trim() !== '') {
                const q = RE_QUOTE.exec(lines[i]);
                body.push(q ? q[1] : lines[i]);
                i++;
            }
            const bq = el('blockquote');
            renderBlocks(body, bq, depth + 1);
            parent.appendChild(bq);
            continue;
        }
        if (RE_UL.test(line) || RE_OL.test(line)) {
            i = renderList(lines, i, parent, depth);
            continue;
        }
        const para = [];
        while (i < lines.length && lines[i].trim() !== '' && (para.length === 0 || !isBlockStart(lines[i]))) {
            para.push(lines[i]);
            i++;
        }
        renderParagraph(para, parent);
    }
}

// Render Markdown `text` into a new <div class="md"> and return it.
export function renderMarkdown(text) {
    const root = el('div', 'md');
    const src = String(text ?? '').replace(/\r\n?/g, '\n');
    renderBlocks(src.split('\n'), root, 0);
    return root;
}
