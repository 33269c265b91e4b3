#!/usr/bin/env python3
"""The Strands SDK reads every session of a root (t/powercut/run, after each power cut).

    STRANDS_SRC=/path/to/sdk-python python3 t/powercut/strands_read.py ROOT
    STRANDS_SRC=... python3 t/powercut/strands_read.py --import    # only whether it imports

STRANDS_SRC names a local copy of the SDK's source (a checkout holding src/strands/, as
issue 38's t/lib/StrandsSDK.pm takes it, or the directory holding strands/); the tree's
t/strands/stubs (issue 38), when there, stand in for third-party modules Debian lacks. For each
session_<id>/ under ROOT the SDK's FileSessionManager reads session.json, then each agent's
agent.json and all its messages, as a restore does (its repository methods, called on the
files as they are: nothing is written). A session or agent without its file and without
messages is one a restore creates (a first run cut before its first message); messages
without them would be lost by it. Prints one line per session it cannot read and exits 1
when there is one.
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
stubs = os.path.join(here, "..", "strands", "stubs")
src = os.environ["STRANDS_SRC"]
if os.path.isdir(os.path.join(src, "src", "strands")):
    src = os.path.join(src, "src")
sys.path[:0] = [p for p in (stubs, src) if os.path.isdir(p)]
from strands.session.file_session_manager import FileSessionManager  # noqa: E402

if sys.argv[1] == "--import":
    sys.exit(0)
root = sys.argv[1]
repo = FileSessionManager.__new__(FileSessionManager)  # no __init__: it would create a session
repo.storage_dir = root
bad = 0
for name in sorted(os.listdir(root)):
    if not name.startswith("session_") or not os.path.isdir(os.path.join(root, name)):
        continue
    sid = name[len("session_"):]
    try:
        agents_dir = os.path.join(root, name, "agents")
        agents = sorted(a[len("agent_"):] for a in os.listdir(agents_dir)) if os.path.isdir(agents_dir) else []
        session = repo.read_session(sid)
        for aid in agents:
            agent = repo.read_agent(sid, aid)
            mdir = os.path.join(agents_dir, f"agent_{aid}", "messages")
            messages = repo.list_messages(sid, aid, limit=None) if os.path.isdir(mdir) else []
            if messages and (session is None or agent is None):
                raise ValueError(f"agent {aid}: {len(messages)} messages, no session.json or agent.json")
    except Exception as e:  # the SDK's own exceptions and json's
        bad += 1
        print(f"session {sid}: {type(e).__name__}: {e}")
sys.exit(1 if bad else 0)
