"""A LangGraph graph that stops at ``interrupt()``, run in a process of its own:

    python -m tests.langgraph_resume URL API_KEY NAMESPACE THREAD start|resume

``start`` runs it (synchronously) until the interrupt; ``resume`` answers it (asynchronously)
and runs it to the end. Each prints the graph's state as JSON.
"""

from __future__ import annotations

import asyncio
import json
import operator
import sys
from typing import Annotated, Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from session.adapters.langgraph import GatewayCheckpointer


class State(TypedDict):
    steps: Annotated[list[str], operator.add]
    answer: str


def draft(state: State) -> dict[str, Any]:
    return {"steps": ["drafted"]}


def review(state: State) -> dict[str, Any]:
    answer = interrupt({"question": "Publish the draft?", "steps": state["steps"]})
    return {"steps": ["reviewed"], "answer": answer}


def publish(state: State) -> dict[str, Any]:
    return {"steps": [f"published ({state['answer']})"]}


def build(checkpointer: GatewayCheckpointer) -> Any:
    graph = StateGraph(State)
    graph.add_node("draft", draft)
    graph.add_node("review", review)
    graph.add_node("publish", publish)
    graph.add_edge(START, "draft")
    graph.add_edge("draft", "review")
    graph.add_edge("review", "publish")
    graph.add_edge("publish", END)
    return graph.compile(checkpointer=checkpointer)


async def resume(graph: Any, checkpointer: GatewayCheckpointer, config: RunnableConfig) -> Any:
    await graph.ainvoke(Command(resume="yes"), config)
    snapshot = await graph.aget_state(config)
    await checkpointer.aclose()
    return snapshot


def main() -> None:
    url, api_key, namespace, thread, step = sys.argv[1:6]
    checkpointer = GatewayCheckpointer.connect(url, api_key=api_key, namespace=namespace)
    graph = build(checkpointer)
    config: RunnableConfig = {"configurable": {"thread_id": thread}}
    if step == "start":
        graph.invoke({"steps": [], "answer": ""}, config)
        snapshot = graph.get_state(config)
        asyncio.run(checkpointer.aclose())
    else:
        snapshot = asyncio.run(resume(graph, checkpointer, config))
    interrupts = [task.interrupts[0].value for task in snapshot.tasks if task.interrupts]
    print(json.dumps({"values": snapshot.values, "next": snapshot.next, "interrupts": interrupts}))


if __name__ == "__main__":
    main()
