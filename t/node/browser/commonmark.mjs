// The CommonMark spec's examples (commonmark-spec-0.31.2.json, from the npm package
// commonmark-spec 0.31.2, CC-BY-SA-4.0, John MacFarlane) through the dashboard's own
// renderer (markdown.js, imported by the page it serves). An example is left out only where
// a rule of the page changes its answer: raw HTML (shown as text), and text holding an
// http(s)/mailto URL (linked). The page's other rules are applied to the spec's expected
// HTML before comparing: headings two levels down, images as links named "image: alt",
// links only to absolute http(s)/mailto URLs (otherwise their text alone).
import { readFileSync } from 'node:fs';

const SPEC = new URL('./commonmark-spec-0.31.2.json', import.meta.url);

// In the page: {run, passed, excluded, failures: [{number, section, want, got}]}.
async function inPage(examples) {
    const { renderMarkdown, safeUrl } = await import(new URL('markdown.js', document.baseURI).href);
    const MD_TAGS = new Set(['P', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'BLOCKQUOTE', 'UL', 'OL', 'LI', 'PRE',
        'CODE', 'EM', 'STRONG', 'A', 'IMG', 'HR', 'BR']);
    const BLOCK = /\s*(<\/?(?:p|h[1-6]|blockquote|ul|ol|li|pre|hr|br)\b[^>]*>)\s*/g;
    const esc = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
    const canon = (node, inPre = false) => {
        let s = '';
        for (const n of node.childNodes) {
            if (n.nodeType === Node.TEXT_NODE) {
                s += esc(inPre ? n.data : n.data.replace(/\s+/g, ' '));
                continue;
            }
            if (n.nodeType !== Node.ELEMENT_NODE) continue;
            const tag = n.tagName.toLowerCase();
            let attrs = '';
            for (const a of ['href', 'title', 'start']) {
                if (n.hasAttribute(a)) attrs += ` ${a}="${esc(n.getAttribute(a))}"`;
            }
            const lang = [...n.classList].find((c) => c.startsWith('language-'));
            if (lang) attrs += ` class="${esc(lang)}"`;
            s += `<${tag}${attrs}>` + canon(n, inPre || tag === 'pre') + `</${tag}>`;
        }
        return inPre ? s : s.replace(BLOCK, '$1').trim();
    };
    // The spec's answer with the page's rules applied.
    const expected = (html) => {
        const doc = new DOMParser().parseFromString('<body>' + html, 'text/html');
        for (const img of [...doc.body.querySelectorAll('img')]) {
            const label = 'image: ' + (img.getAttribute('alt') || img.getAttribute('src'));
            const href = safeUrl(img.getAttribute('src'));
            let repl = doc.createTextNode(label);
            if (href) {
                repl = doc.createElement('a');
                repl.setAttribute('href', href);
                if (img.hasAttribute('title')) repl.setAttribute('title', img.getAttribute('title'));
                repl.textContent = label;
            }
            img.replaceWith(repl);
        }
        for (const a of [...doc.body.querySelectorAll('a')]) {
            const href = safeUrl(a.getAttribute('href'));
            if (href) a.setAttribute('href', href);
            else a.replaceWith(...a.childNodes);
        }
        for (const hd of [...doc.body.querySelectorAll('h1, h2, h3, h4, h5, h6')]) {
            const h = doc.createElement('h' + Math.min(6, Number(hd.tagName[1]) + 2));
            h.append(...hd.childNodes);
            hd.replaceWith(h);
        }
        return doc.body;
    };
    // (decided on the string first: a style attribute parsed here breaks the page's CSP)
    const rawSource = (ex) => ex.section === 'HTML blocks' || ex.section === 'Raw HTML' || /\sstyle\s*=/i.test(ex.html);
    const rawHtml = (ex, body) => {
        if ([...body.querySelectorAll('*')].some((e) => !MD_TAGS.has(e.tagName))) return true;
        const raw = ex.markdown.match(/<\/?[A-Za-z][A-Za-z0-9-]*(?=[\s/>])|<!--|<\?|<![A-Z]/g) || [];
        return raw.some((t) => ex.html.includes(t));
    };
    const linked = (body) => {
        const c = body.cloneNode(true);
        for (const e of [...c.querySelectorAll('a, code, pre')]) e.remove();
        return /(https?:\/\/|mailto:)\S/i.test(c.textContent);
    };
    const r = { run: 0, passed: 0, excluded: 0, failures: [] };
    for (const ex of examples) {
        if (rawSource(ex)) {
            r.excluded++;
            continue;
        }
        const spec = new DOMParser().parseFromString('<body>' + ex.html, 'text/html').body;
        if (rawHtml(ex, spec) || linked(spec)) {
            r.excluded++;
            continue;
        }
        r.run++;
        const want = canon(expected(ex.html));
        const got = canon(renderMarkdown(ex.markdown));
        if (want === got) r.passed++;
        else r.failures.push({ number: ex.number, section: ex.section, markdown: ex.markdown, want, got });
    }
    return r;
}

// Run every example in `page` (a dashboard page, loaded); returns inPage's answer.
export async function commonmarkConformance(page) {
    const examples = JSON.parse(readFileSync(SPEC, 'utf8'));
    return page.evaluate(inPage, examples);
}
