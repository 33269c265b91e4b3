"""One Strands turn on svc's root, as an application would take it:
    turn.py ROOT SESSION PROMPT [--summarizing] [--window N] [--preserve N] [--max N]
            [--image FILE] [--document FILE] [--answer INTERRUPT_RESPONSE] [--state K=JSON]
prints {"stop_reason", "text", "interrupts", "messages"} as JSON (messages: what the
restored agent holds after the turn, bytes as their length). PROMPT "-" with --answer
resumes an interrupted turn with that response to every pending interrupt."""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import svcstrands  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("session")
    ap.add_argument("prompt")
    ap.add_argument("--summarizing", action="store_true")
    ap.add_argument("--window", type=int, default=40)
    ap.add_argument("--preserve", type=int, default=10)
    ap.add_argument("--max", type=int, default=None)
    ap.add_argument("--image")
    ap.add_argument("--document")
    ap.add_argument("--answer")
    ap.add_argument("--state", action="append", default=[], help="KEY=JSON into agent.state")
    a = ap.parse_args()
    ag = svcstrands.agent(a.root, a.session,
                          manager="summarizing" if a.summarizing else "sliding",
                          window=a.window, preserve=a.preserve, max_messages=a.max)
    for kv in a.state:
        k, v = kv.split("=", 1)
        ag.state.set(k, json.loads(v))
    if a.answer is not None:
        prompt = [{"interruptResponse": {"interruptId": i.id, "response": a.answer}}
                  for i in ag._interrupt_state.interrupts.values() if i.response is None]
    elif a.image or a.document:
        prompt = [{"text": a.prompt}]
        if a.image:
            with open(a.image, "rb") as f:
                prompt.append({"image": {"format": "png", "source": {"bytes": f.read()}}})
        if a.document:
            with open(a.document, "rb") as f:
                prompt.append({"document": {"format": "txt", "name": os.path.basename(a.document),
                                            "source": {"bytes": f.read()}}})
    else:
        prompt = a.prompt
    res = ag(prompt)
    print(json.dumps({
        "stop_reason": res.stop_reason,
        "text": svcstrands._text(res.message) if res.message else "",
        "interrupts": [{"id": i.id, "name": i.name, "reason": i.reason}
                       for i in (res.interrupts or [])],
        "messages": svcstrands.plain(ag.messages),
    }))


main()
