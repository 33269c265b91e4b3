"""Reading a session directory as Strands' FileSessionManager does, for the tests' Python checks:
load() parses a file and asserts it is in Python's own json.dumps(indent=2) form; messages()
yields (message_id from the name, record) in message order."""
import json
import os


def load(p):
    raw = open(p, 'rb').read().decode('utf-8')
    o = json.loads(raw)
    assert raw == json.dumps(o, indent=2, ensure_ascii=False), p + ': not in Python\'s format'
    return o


def messages(d, aid):
    md = os.path.join(d, 'agents', 'agent_' + aid, 'messages')
    names = [f for f in os.listdir(md) if f.startswith('message_') and f.endswith('.json')]
    for f in sorted(names, key=lambda f: int(f[8:-5])):
        yield int(f[8:-5]), load(os.path.join(md, f))
