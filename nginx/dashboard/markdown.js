// Markdown (CommonMark, with GFM tables and ~~strike~~) parsed by the vendored markdown-it
// (vendor/markdown-it.min.js), its tokens turned into DOM nodes here.
//
// Safety contract: markdown-it's HTML renderer is never used. Message text reaches the page
// only through createTextNode; raw HTML is off (it shows as text); elements come from the
// fixed TAGS table, and the only attributes taken from a message are a link's href (an
// absolute http:, https: or mailto: URL, checked by safeUrl) and title. Images are never
// loaded: ![alt](url) becomes a link named "image: alt" (or plain text). Headings drop two
// levels (a message's h1 would compete with the page's own).
import markdownit from './vendor/markdown-it.min.js';

const md = markdownit({ html: false, linkify: true, typographer: false, maxNesting: 40 });
// only links whose scheme is written out (http://, https://, mailto:) are found in text
md.linkify.set({ fuzzyLink: false, fuzzyEmail: false, fuzzyIP: false });

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

// A link to `url` (null when the URL is refused), with `title` when there is one.
function link(url, title) {
    const href = safeUrl(url);
    if (!href) return null;
    const a = el('a');
    a.href = href;
    a.rel = 'noopener noreferrer nofollow';
    a.target = '_blank';
    if (title) a.title = title;
    return a;
}

// Token type (without _open) -> element; headings are mapped apart.
const TAGS = {
    paragraph: 'p', blockquote: 'blockquote', bullet_list: 'ul', ordered_list: 'ol', list_item: 'li',
    table: 'table', thead: 'thead', tbody: 'tbody', tr: 'tr', th: 'th', td: 'td',
    em: 'em', strong: 'strong', s: 's',
};
const ALIGN = { 'text-align:left': 'al-left', 'text-align:center': 'al-center', 'text-align:right': 'al-right' };

// The plain text of inline tokens (an image's alt text).
function plainText(tokens) {
    let s = '';
    for (const t of tokens || []) {
        if (t.type === 'image') s += plainText(t.children);
        else if (t.type === 'softbreak' || t.type === 'hardbreak') s += '\n';
        else if (t.nesting === 0) s += t.content;
    }
    return s;
}

function codeBlock(text, info) {
    const pre = el('pre', 'code');
    const code = el('code');
    const lang = md.utils.unescapeAll(info || '').trim().split(/\s+/)[0];
    if (lang) {
        code.className = 'language-' + lang; // prefixed: it cannot name one of the page's classes
        if (/^[A-Za-z0-9_+.#-]{1,32}$/.test(lang)) {
            code.dataset.lang = lang;
            pre.dataset.lang = lang;
        }
    }
    code.textContent = text;
    pre.appendChild(code);
    return pre;
}

// The element an opening token starts, or null when its content goes into the parent
// (a tight list's hidden paragraph, a link whose URL is refused).
function openTag(t) {
    const type = t.type.slice(0, -'_open'.length);
    if (type === 'paragraph' && t.hidden) return null;
    if (type === 'link') return link(t.attrGet('href'), t.attrGet('title'));
    if (type === 'heading') return el('h' + Math.min(6, Number(t.tag.slice(1)) + 2));
    const tag = TAGS[type];
    if (!tag) return null;
    const e = el(tag, ALIGN[t.attrGet('style')]);
    if (type === 'ordered_list') {
        const n = Number(t.attrGet('start') ?? 1);
        if (Number.isFinite(n) && n !== 1) e.start = n;
    }
    return e;
}

// A token that neither opens nor closes: its node, or null.
function leaf(t) {
    switch (t.type) {
        case 'text':
        case 'text_special':
        case 'html_inline': // not produced with html off; text if it ever is
        case 'html_block':
            return document.createTextNode(t.content);
        case 'code_inline': {
            const c = el('code');
            c.textContent = t.content;
            return c;
        }
        case 'softbreak':
            return document.createTextNode('\n');
        case 'hardbreak':
            return el('br');
        case 'hr':
            return el('hr');
        case 'fence':
            return codeBlock(t.content, t.info);
        case 'code_block':
            return codeBlock(t.content, '');
        case 'image': {
            // Images are not loaded (nothing is fetched from outside): name them.
            const label = 'image: ' + (plainText(t.children) || t.attrGet('src'));
            const a = link(t.attrGet('src'), t.attrGet('title'));
            if (!a) return document.createTextNode(label);
            a.textContent = label;
            return a;
        }
        default:
            return null;
    }
}

// Append the nodes of `tokens` (a block or an inline token list) to `root`.
function build(tokens, root) {
    const stack = [root];
    for (const t of tokens) {
        const parent = stack[stack.length - 1];
        if (t.type === 'inline') build(t.children || [], parent);
        else if (t.nesting === 1) {
            const e = openTag(t);
            if (e) parent.appendChild(e);
            stack.push(e || parent);
        } else if (t.nesting === -1) {
            if (stack.length > 1) stack.pop();
        } else {
            const n = leaf(t);
            if (n) parent.appendChild(n);
        }
    }
}

// Render Markdown `text` into a new <div class="md"> and return it.
export function renderMarkdown(text) {
    const root = el('div', 'md');
    build(md.parse(String(text ?? ''), {}), root);
    return root;
}
