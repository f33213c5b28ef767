"""The OpenAI Agents SDK's ``HostedMCPTool`` against the gateway: the gateway runs the MCP
server's tools for a Chat Completions model, with and without approvals, streamed and not."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from agents import (
    Agent,
    HostedMCPTool,
    MCPToolApprovalFunctionResult,
    MCPToolApprovalRequest,
    OpenAIResponsesModel,
    Runner,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

from .conftest import Gateway
from .fake_upstream import Reply
from .mcp_gateway import call, tool_messages
from .mcp_server import McpServer

pytestmark = [pytest.mark.anyio, pytest.mark.system]


@pytest.fixture
async def client(mcp: Gateway) -> AsyncIterator[AsyncOpenAI]:
    set_tracing_disabled(True)
    async with AsyncOpenAI(
        base_url=f"{mcp.url}/v1", api_key="k", max_retries=0, _strict_response_validation=True
    ) as opened:
        yield opened


def agent(client: AsyncOpenAI, tool: HostedMCPTool) -> Agent[Any]:
    model = OpenAIResponsesModel(model="chat-model", openai_client=client)
    return Agent(name="dice", instructions="Roll when asked.", model=model, tools=[tool])


async def test_a_hosted_mcp_tool_runs_through_the_gateway(
    mcp: Gateway, dice: McpServer, client: AsyncOpenAI
) -> None:
    tool = HostedMCPTool(
        tool_config={
            "type": "mcp",
            "server_label": "dice",
            "server_url": dice.url,
            "require_approval": "never",
        }
    )
    mcp.fake.script(call(arguments='{"sides": 12}'), Reply(text="Twelve."))
    result = await Runner.run(agent(client, tool), "Roll a d12.")
    assert result.final_output == "Twelve."
    assert dice.calls == [("roll", {"sides": 12})]
    kinds = [item.type for item in result.new_items]
    assert "mcp_list_tools_item" in kinds and kinds[-1] == "message_output_item"


async def test_a_hosted_mcp_tool_streamed(
    mcp: Gateway, dice: McpServer, client: AsyncOpenAI
) -> None:
    tool = HostedMCPTool(
        tool_config={
            "type": "mcp",
            "server_label": "dice",
            "server_url": dice.url,
            "require_approval": "never",
        }
    )
    mcp.fake.script(call(), Reply(text="Six."))
    run = Runner.run_streamed(agent(client, tool), "Roll.")
    names = [
        event.name async for event in run.stream_events() if event.type == "run_item_stream_event"
    ]
    assert run.final_output == "Six." and dice.calls == [("roll", {"sides": 6})]
    assert "mcp_list_tools" in names


@pytest.mark.parametrize("approve", [True, False])
async def test_a_hosted_mcp_tool_with_approval(
    mcp: Gateway, dice: McpServer, client: AsyncOpenAI, approve: bool
) -> None:
    asked: list[str] = []

    def decide(request: MCPToolApprovalRequest) -> MCPToolApprovalFunctionResult:
        asked.append(request.data.name)
        return {"approve": approve, "reason": "house rules"}

    tool = HostedMCPTool(
        tool_config={"type": "mcp", "server_label": "dice", "server_url": dice.url},
        on_approval_request=decide,
    )
    mcp.fake.script(call(arguments='{"sides": 4}'), Reply(text="Done."))
    result = await Runner.run(agent(client, tool), "Roll a d4.")
    assert asked == ["roll"] and result.final_output == "Done."
    told = tool_messages(mcp.fake.last)[-1]["content"]
    if approve:
        assert dice.calls == [("roll", {"sides": 4})] and told == "rolled a 4"
    else:
        assert dice.calls == [] and "denied" in told and "house rules" in told
