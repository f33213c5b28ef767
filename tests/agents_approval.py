"""An OpenAI Agents SDK run that stops for a tool approval, in a process of its own:

    python -m tests.agents_approval URL API_KEY NAMESPACE SESSION LEDGER start|resume

``start`` runs until the agent asks to call ``refund`` (which needs approval) and keeps the
interrupted run with the session; ``resume`` loads it, approves, and finishes. The model is
scripted (the SDK drives any model), and ``refund`` appends to the file LEDGER.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agents import (
    Agent,
    Model,
    ModelResponse,
    Runner,
    Usage,
    function_tool,
    set_tracing_disabled,
)
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from session.adapters.openai_agents import StoreSession


def text_message(text: str) -> ResponseOutputMessage:
    part = ResponseOutputText(type="output_text", text=text, annotations=[])
    return ResponseOutputMessage(
        id="msg_1", type="message", role="assistant", status="completed", content=[part]
    )


class ScriptedModel(Model):
    """Asks for a refund until it sees the tool's output, then confirms it."""

    def reply(self, items: list[Any]) -> Any:
        done = any(
            isinstance(item, dict) and item.get("type") == "function_call_output" for item in items
        )
        if done:
            return text_message("Refunded.")
        return ResponseFunctionToolCall(
            id="fc_1",
            call_id="call_1",
            type="function_call",
            name="refund",
            arguments=json.dumps({"order": "A-17"}),
        )

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        items = kwargs["input"] if "input" in kwargs else args[1]
        listed = [{"role": "user", "content": items}] if isinstance(items, str) else list(items)
        return ModelResponse(output=[self.reply(listed)], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


def make_agent(ledger: Path) -> Agent[Any]:
    @function_tool(needs_approval=True)
    def refund(order: str) -> str:
        """Refund an order."""
        with ledger.open("a") as out:
            out.write(order + "\n")
        return f"refunded {order}"

    return Agent(name="support", model=ScriptedModel(), tools=[refund])


async def main() -> None:
    url, api_key, namespace, session_id, ledger, step = sys.argv[1:7]
    set_tracing_disabled(True)
    agent = make_agent(Path(ledger))
    session = StoreSession.connect(url, session_id=session_id, api_key=api_key, namespace=namespace)
    if step == "start":
        result = await Runner.run(agent, "Please refund order A-17.", session=session)
        await session.save_run_state(result.to_state())
        report = {"interruptions": [item.name for item in result.interruptions]}
    else:
        state = await session.load_run_state(agent)
        assert state is not None, "no run was kept"
        for item in state.get_interruptions():
            state.approve(item)
        result = await Runner.run(agent, state, session=session)
        await session.forget_run_state()
        report = {"final_output": result.final_output}
    report["items"] = [item.get("type", "message") for item in await session.get_items()]
    await session.close()
    print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(main())
