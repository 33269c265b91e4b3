"""What svc's tests run the real Strands Agents SDK with (see docs/TESTING.md).

The SDK's source comes from the directory STRANDS_SRC names (its src/ is put on sys.path);
the few third-party modules it imports that Debian does not package are the stand-ins in
stubs/ beside this file. Nothing here re-implements Strands: the Agent, FileSessionManager,
conversation managers, hooks, @tool, Swarm and Graph are the SDK's own. Only the model is
ours: ScriptedModel answers from the conversation it is given, deterministically, and logs
every call (the messages, the system prompt) so a test can see what reached it.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("STRANDS_SRC")
if not SRC:
    sys.exit("STRANDS_SRC is not set: it names a checkout of strands-agents/sdk-python")
sys.path[:0] = [os.path.join(SRC, "src"), os.path.join(HERE, "stubs")]

from strands import Agent, tool  # noqa: E402
from strands.agent.conversation_manager import (  # noqa: E402
    SlidingWindowConversationManager,
    SummarizingConversationManager,
)
from strands.hooks import BeforeToolCallEvent, HookProvider, HookRegistry  # noqa: E402
from strands.models import Model  # noqa: E402
from strands.session.file_session_manager import FileSessionManager  # noqa: E402
from strands.types.exceptions import ContextWindowOverflowException  # noqa: E402

SUMMARY_PROMPT_START = "You are a conversation summarizer."


def _text(message):
    return "".join(b.get("text", "") for b in message.get("content", []))


def _result_text(message):
    out = []
    for b in message.get("content", []):
        tr = b.get("toolResult")
        if tr:
            for item in tr.get("content", []):
                out.append(item["text"] if "text" in item else json.dumps(item.get("json")))
    return " | ".join(out)


def plain(o):
    """o with every bytes value as {"bytes": its length}, for JSON."""
    if isinstance(o, bytes):
        return {"bytes": len(o)}
    if isinstance(o, dict):
        return {k: plain(v) for k, v in o.items()}
    if isinstance(o, list):
        return [plain(v) for v in o]
    return o


def _media(message):
    """What a message carries besides text, as the model would see it."""
    seen = []
    for b in message.get("content", []):
        for kind in ("image", "document"):
            if kind in b:
                src = b[kind].get("source", {})
                size = len(src["bytes"]) if isinstance(src.get("bytes"), bytes) else None
                seen.append({"kind": kind, "format": b[kind].get("format"),
                             "name": b[kind].get("name"), "size": size,
                             "location": src.get("location")})
    return seen


class ScriptedModel(Model):
    """A deterministic model. The newest user message decides:
    "tool NAME {json}" calls tool NAME; "tools N" calls N lookup tools at once; after tool
    results it says what they returned; the summarization request (Strands' prompt) gets a
    summary naming the messages summarised; anything else is answered "strands: <text>".
    Every call is appended to the JSON lines file STRANDS_MODEL_LOG names."""

    def __init__(self, log=None, max_messages=None):
        self.log = log or os.environ.get("STRANDS_MODEL_LOG")
        # past this many messages the context "overflows": Strands' manager must reduce it
        self.max_messages = max_messages
        self.config = {"model_id": "scripted"}
        self.calls = 0

    def update_config(self, **kw):
        self.config.update(kw)

    def get_config(self):
        return self.config

    async def structured_output(self, output_model, prompt, system_prompt=None, **kw):
        raise NotImplementedError
        yield  # pragma: no cover

    def _record(self, messages, system_prompt):
        if not self.log:
            return
        with open(self.log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"system": system_prompt, "messages": plain(messages)}) + "\n")

    def _reply(self, messages, system_prompt):
        if system_prompt and system_prompt.startswith(SUMMARY_PROMPT_START):
            texts = [_text(m)[:40] for m in messages[:-1]]
            return [{"text": "SUMMARY of %d messages: %s" % (len(texts), " / ".join(texts))}]
        last = messages[-1] if messages else {"content": []}
        if any("toolResult" in b for b in last.get("content", [])):
            return [{"text": "tools said: " + _result_text(last)}]
        text = _text(last)
        self.calls += 1
        if text.startswith("tool "):
            _, name, *rest = text.split(" ", 2)
            args = json.loads(rest[0]) if rest else {}
            return [{"toolUse": {"toolUseId": "st-%d-%s" % (os.getpid(), self.calls),
                                 "name": name, "input": args}}]
        if text.startswith("tools "):
            n = int(text.split()[1])
            return [{"toolUse": {"toolUseId": "st-%d-%d-%d" % (os.getpid(), self.calls, i),
                                 "name": "lookup", "input": {"key": "k%d" % i}}}
                    for i in range(n)]
        media = _media(last)
        extra = (" [media: %s]" % json.dumps(media, sort_keys=True)) if media else ""
        return [{"text": "strands: %s (%d messages)%s" % (text, len(messages), extra)}]

    async def stream(self, messages, tool_specs=None, system_prompt=None, tool_choice=None,
                     **kw):
        self._record(messages, system_prompt)
        if self.max_messages and len(messages) > self.max_messages and not (
                system_prompt and system_prompt.startswith(SUMMARY_PROMPT_START)):
            raise ContextWindowOverflowException("%d messages" % len(messages))
        content = self._reply(messages, system_prompt)
        yield {"messageStart": {"role": "assistant"}}
        stop = "end_turn"
        for block in content:
            if "text" in block:
                yield {"contentBlockStart": {"start": {}}}
                yield {"contentBlockDelta": {"delta": {"text": block["text"]}}}
                yield {"contentBlockStop": {}}
            else:
                stop = "tool_use"
                tu = block["toolUse"]
                yield {"contentBlockStart": {"start": {"toolUse": {
                    "name": tu["name"], "toolUseId": tu["toolUseId"]}}}}
                yield {"contentBlockDelta": {"delta": {"toolUse": {
                    "input": json.dumps(tu["input"])}}}}
                yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": stop}}
        yield {"metadata": {"usage": {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5},
                            "metrics": {"latencyMs": 1}}}


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: what to look up
    """
    return "value-of-" + key


@tool
def numbers(n: int) -> dict:
    """Big numbers back.

    Args:
        n: a number
    """
    return {"n": n, "big": 123456789012345678901234567890, "float": 1.10}


@tool
def dangerous(target: str) -> str:
    """Something that needs approval.

    Args:
        target: what to act on
    """
    with open(os.environ.get("STRANDS_SIDE_EFFECTS", os.devnull), "a") as f:
        f.write("dangerous ran on %s\n" % target)
    return "did it to " + target


class Approval(HookProvider):
    """Raises an interrupt before `dangerous` runs; "yes" lets it run, anything else
    cancels it."""

    def register_hooks(self, registry: HookRegistry, **kw):
        registry.add_callback(BeforeToolCallEvent, self.ask)

    def ask(self, event: BeforeToolCallEvent):
        if event.tool_use["name"] != "dangerous":
            return
        answer = event.interrupt("approve-dangerous", reason={"target": event.tool_use["input"]})
        if answer != "yes":
            event.cancel_tool = "not approved"


def agent(root, session_id, agent_id="svc-agent", manager="sliding", window=40,
          preserve=10, ratio=0.3, max_messages=None):
    """A Strands Agent on svc's root: FileSessionManager, the manager asked for, our tools
    and the approval hook."""
    if manager == "summarizing":
        cm = SummarizingConversationManager(summary_ratio=ratio, preserve_recent_messages=preserve)
    else:
        cm = SlidingWindowConversationManager(window_size=window)
    sm = FileSessionManager(session_id=session_id, storage_dir=root)
    return Agent(model=ScriptedModel(max_messages=max_messages), agent_id=agent_id, session_manager=sm,
                 conversation_manager=cm, tools=[lookup, numbers, dangerous],
                 hooks=[Approval()], callback_handler=None)
