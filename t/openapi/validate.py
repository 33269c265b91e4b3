#!/usr/bin/python3
"""Validate recorded answers against docs/openapi.yaml (t/openapi/answers.t runs it).

    validate.py OPENAPI.yaml DIR     DIR holds the *.jsonl files t/lib/SvcTest.pm writes
                                     with SVC_ANSWERS set: one answer a line, {test, method,
                                     path, status, content_type, body?}

Each answer is matched to its operation (the path from its /api/ on, so a base path does
not matter; HEAD as GET), its status to a response of that operation (the status, else
4XX or 5XX, else default), its media type to one of that response's, and its JSON body
validated against that schema (JSON Schema 2020-12, the dialect of OpenAPI 3.1). A path no
operation has, or a method its path does not take, must be answered with the error
object. An HTML page is the web server's own (svc-fcgi never answers HTML) and is only
counted. Prints one line per kind of mismatch (with how many answers and which tests) and
the counts; exits 1 when there is a mismatch. Debian 12's python3-yaml and
python3-jsonschema (4.10) are enough.
"""
import collections
import glob
import json
import os
import re
import sys

import yaml
from jsonschema import Draft202012Validator

try:  # jsonschema >= 4.18 resolves $ref through `referencing`
    from referencing import Registry, Resource

    def make_validator(doc, ref):
        res = Resource.from_contents(doc, default_specification=None)
        reg = Registry().with_resource("urn:svc-openapi", res)
        return Draft202012Validator({"$ref": "urn:svc-openapi" + ref}, registry=reg)
except ImportError:  # Debian 12's 4.10
    from jsonschema import RefResolver

    def make_validator(doc, ref):
        return Draft202012Validator({"$ref": ref}, resolver=RefResolver("", doc))

METHODS = ("get", "put", "post", "delete", "patch")


def compile_paths(doc):
    """[(regex, template)] of the document's paths, literal ones first (as the router)."""
    out = []
    for tpl in doc.get("paths", {}):
        rx = "^" + re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(tpl)) + "$"
        out.append((re.compile(rx), tpl, "{" in tpl))
    out.sort(key=lambda t: t[2])
    return out


def esc(token):
    """A JSON pointer token."""
    return token.replace("~", "~0").replace("/", "~1")


def pointer(node_path):
    return "".join("/" + str(p) for p in node_path) or "/"


def main():
    spec_path, answers_dir = sys.argv[1], sys.argv[2]
    with open(spec_path) as f:
        doc = yaml.safe_load(f)
    paths = compile_paths(doc)
    validators = {}
    problems = collections.OrderedDict()
    counts = collections.Counter()

    def validate(ref, body):
        if ref not in validators:
            validators[ref] = make_validator(doc, ref)
        return list(validators[ref].iter_errors(body))

    def problem(key, test):
        entry = problems.setdefault(key, [0, set()])
        entry[0] += 1
        entry[1].add(os.path.basename(test))

    files = sorted(glob.glob(os.path.join(answers_dir, "*.jsonl")))
    for fn in files:
        with open(fn, errors="replace") as f:
            lines = f.readlines()
        for line in lines:
            try:
                a = json.loads(line)
            except ValueError:
                continue  # a line cut by a test killed while writing
            counts["answers"] += 1
            method = a["method"].lower()
            method = "get" if method == "head" else method
            i = a["path"].find("/api/")
            path = a["path"][i:] if i >= 0 else a["path"]
            status = str(a["status"])
            ctype = a.get("content_type", "").split(";")[0].strip().lower()
            test = a.get("test", "?")
            if ctype == "text/html":
                # the web server's own page (Apache's or nginx's 401 of basic auth, a 502
                # without svc-errors.conf): svc-fcgi never answers HTML
                counts["web server pages"] += 1
                continue
            tpl = next((t for rx, t, _ in paths if rx.match(path)), None)
            op = doc["paths"][tpl].get(method) if tpl else None
            if op is None:
                # no such route: the router's (or the web server's) error object
                counts["outside the document"] += 1
                if "body" in a and int(status) >= 400:
                    errs = validate("#/components/schemas/Error", a["body"])
                    if errs:
                        problem("%s %s %s (no such operation): not the error object: %s"
                                % (a["method"], tpl or path, status, errs[0].message), test)
                continue
            responses = op.get("responses", {})
            key = next((k for k in (status, status[0] + "XX", "default") if k in responses), None)
            where = "%s %s %s" % (method.upper(), tpl, status)
            if key is None:
                problem("%s: the document lists no such answer" % where, test)
                continue
            base = "#/paths/%s/%s/responses/%s" % (esc(tpl), method, key)
            resp = responses[key]
            if "$ref" in resp:
                base = resp["$ref"]
                resp = doc["components"]["responses"][base.rsplit("/", 1)[1]]
            content = resp.get("content", {})
            if a["method"].upper() == "HEAD" or int(status) in (204, 304) or not ctype:
                counts["without a body"] += 1
                continue
            if ctype not in content:
                problem("%s: answered %s, which the document does not list (%s)"
                        % (where, ctype, ", ".join(content) or "none"), test)
                continue
            if "body" not in a:
                counts["not JSON"] += 1
                continue
            ref = "%s/content/%s/schema" % (base, esc(ctype))
            errs = validate(ref, a["body"])
            counts["validated"] += 1
            for e in errs[:1]:
                problem("%s: %s at %s" % (where, e.message[:200], pointer(e.absolute_path)), test)

    for key, (n, tests) in problems.items():
        print("MISMATCH %s [%d answer%s; %s]" % (key, n, "" if n == 1 else "s",
                                               ", ".join(sorted(tests)[:5])))
    print("SUMMARY %d files, %d answers, %d validated, %d without a body, %d outside the "
          "document, %d pages of the web server, %d mismatches"
          % (len(files), counts["answers"], counts["validated"], counts["without a body"],
             counts["outside the document"], counts["web server pages"],
             sum(n for n, _ in problems.values())))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
