"""The Python side of the cross-language round trips: each command prints its result as JSON.

python python_side.py COMMAND BASE_URL API_KEY ARGS...
"""

import asyncio
import json
import operator
import sys
from typing import Annotated, Any, TypedDict


async def append(url: str, key: str, conversation: str, payloads: str) -> Any:
    from session.agent_store import NewMessage, RemoteAgentStore

    store = RemoteAgentStore.connect(url, api_key=key)
    batch = [NewMessage(p, role="user", message_id=f"{conversation}-py-{n}")
             for n, p in enumerate(json.loads(payloads))]  # fmt: skip
    appended = await store.append_messages(conversation, batch)
    await store.close()
    return [m.to_json() for m in appended]


async def messages(url: str, key: str, conversation: str) -> Any:
    from session.agent_store import RemoteAgentStore, to_anthropic_messages, to_openai_input

    store = RemoteAgentStore.connect(url, api_key=key)
    listed = (await store.list_messages(conversation, limit=1000)).items
    state = await store.state_get(conversation, "shared")
    binding = await store.claude_session_binding(conversation)
    await store.close()
    return {
        "items": [m.to_json() for m in listed],
        "openai": to_openai_input(listed),
        "anthropic": to_anthropic_messages(listed),
        "state": state,
        "binding": binding,
    }


def notes_graph() -> Any:
    """The graph ``langgraph.test.ts`` builds too: the same channels, in both languages."""
    from langchain_core.messages import AIMessage, AnyMessage
    from langgraph.graph import START, StateGraph
    from langgraph.graph.message import add_messages

    class Notes(TypedDict):
        notes: Annotated[list[str], operator.add]
        messages: Annotated[list[AnyMessage], add_messages]

    def take_note(state: Notes) -> Any:
        note = f"py note {len(state['notes']) + 1}"
        return {"notes": [note], "messages": [AIMessage(note)]}

    builder = StateGraph(Notes)
    builder.add_node("take_note", take_note)
    builder.add_edge(START, "take_note")
    return builder


async def graph(url: str, key: str, thread: str) -> Any:
    from session.adapters.langgraph import GatewayCheckpointer

    checkpointer = GatewayCheckpointer.connect(url, api_key=key)
    compiled = notes_graph().compile(checkpointer=checkpointer)
    result = await compiled.ainvoke({"notes": []}, {"configurable": {"thread_id": thread}})
    await checkpointer.aclose()
    said = [(type(m).__name__, m.content) for m in result["messages"]]
    return {"notes": result["notes"], "messages": said}


async def memory(url: str, key: str, namespace: str, put: str) -> Any:
    from session.adapters.langgraph import GatewayStore

    store = GatewayStore.connect(url, api_key=key)
    path = tuple(json.loads(namespace))
    if put != "-":
        await store.aput(path, "py", json.loads(put))
    found = await store.asearch(path)
    await store.aclose()
    return {item.key: item.value for item in found}


async def claude(url: str, key: str, project_key: str, session: str, entries: str) -> Any:
    from session.adapters.claude import ClaudeSessionStore

    store = ClaudeSessionStore.connect(url, api_key=key)
    where: Any = {"project_key": project_key, "session_id": session}
    if entries != "-":
        await store.append(where, json.loads(entries))
    loaded = await store.load(where)
    listed = await store.list_sessions(project_key)
    summaries = await store.list_session_summaries(project_key)
    await store.close()
    return {"loaded": loaded, "sessions": listed, "summaries": summaries}


COMMANDS = {"append": append, "messages": messages, "graph": graph, "memory": memory,
            "claude": claude}  # fmt: skip

if __name__ == "__main__":
    command, *args = sys.argv[1:]
    print(json.dumps(asyncio.run(COMMANDS[command](*args))))
