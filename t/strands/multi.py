"""A Strands Swarm and a Graph keep their state in a session on svc's root:
    multi.py ROOT SESSION
runs a Swarm "team" (two agents) and a Graph "pipeline" (first -> second), each with a
FileSessionManager on SESSION, and prints their states' ids and statuses as JSON."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import svcstrands  # noqa: E402
from strands import Agent  # noqa: E402
from strands.multiagent import GraphBuilder, Swarm  # noqa: E402
from strands.session.file_session_manager import FileSessionManager  # noqa: E402


def node(name):
    return Agent(name=name, model=svcstrands.ScriptedModel(), callback_handler=None)


def main():
    root, sid = sys.argv[1], sys.argv[2]
    swarm = Swarm([node("alpha"), node("beta")], id="team",
                  session_manager=FileSessionManager(session_id=sid, storage_dir=root))
    sres = swarm("plan the work")
    b = GraphBuilder()
    b.add_node(node("first"), "first")
    b.add_node(node("second"), "second")
    b.add_edge("first", "second")
    b.set_graph_id("pipeline")
    b.set_session_manager(FileSessionManager(session_id=sid, storage_dir=root))
    gres = b.build()("run the pipeline")
    print(json.dumps({"swarm": str(sres.status.value), "graph": str(gres.status.value)}))


main()
