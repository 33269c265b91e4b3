"""A small stand-in for docstring_parser, written for svc's tests (Debian 12 has no
package of it): parse() reads the Google style `Args:` section into params."""
import re


class DocstringParam:
    def __init__(self, arg_name, description):
        self.arg_name = arg_name
        self.description = description


class Docstring:
    def __init__(self, short_description, params):
        self.short_description = short_description
        self.params = params


def parse(text):
    lines = (text or "").splitlines()
    params, in_args = [], False
    for line in lines:
        s = line.strip()
        if s.lower() in ("args:", "arguments:", "parameters:"):
            in_args = True
            continue
        if in_args:
            m = re.match(r"^(\w+)(?:\s*\([^)]*\))?:\s*(.*)$", s)
            if m:
                params.append(DocstringParam(m.group(1), m.group(2)))
            elif s.endswith(":") or not s:
                in_args = bool(s) is False and in_args
    return Docstring(lines[0] if lines else "", params)
