"""Named operations the framework adapters call, in process or through ``/v1/store/calls/``.

Each call takes JSON arguments: ``namespace`` (which partitions everything an adapter stores)
and the operation's own. The same table serves :meth:`AgentStore.call` and the HTTP route,
so a remote adapter and an in-process one run exactly the same code against the database.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from ..sql import Operation
from . import claude_ops, langgraph_items, langgraph_ops
from .call_args import arguments_model, check_arguments
from .errors import bad_request
from .values import check_id


@dataclass(frozen=True)
class Call:
    make: Callable[..., Operation]
    write: bool
    clock: str | None = None  # the argument that receives the store's time: now or now_ms
    retried: bool = True  # safe to send again after a network error or a 5xx
    arguments: type[BaseModel] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "arguments", arguments_model(self.make, self.clock))


CALLS: dict[str, Call] = {
    # An append without entry uuids is not idempotent; the Claude SDK retries it itself.
    "claude.append": Call(claude_ops.append, True, "now_ms", retried=False),
    "claude.load": Call(claude_ops.load, False),
    "claude.list_sessions": Call(claude_ops.list_sessions, False),
    "claude.summary": Call(claude_ops.summary, False),
    "claude.put_summary": Call(claude_ops.put_summary, True, "now_ms"),
    "claude.list_summaries": Call(claude_ops.list_summaries, False),
    "claude.delete": Call(claude_ops.delete, True),
    "claude.list_subkeys": Call(claude_ops.list_subkeys, False),
    "langgraph.put": Call(langgraph_ops.put, True),
    "langgraph.put_writes": Call(langgraph_ops.put_writes, True),
    "langgraph.get": Call(langgraph_ops.get, False),
    "langgraph.list": Call(langgraph_ops.list_checkpoints, False),
    "langgraph.delete_thread": Call(langgraph_ops.delete_thread, True),
    "langgraph.delete_for_runs": Call(langgraph_ops.delete_for_runs, True),
    "langgraph.copy_thread": Call(langgraph_ops.copy_thread, True),
    "langgraph.prune": Call(langgraph_ops.prune, True),
    "langgraph.store": Call(langgraph_items.batch, True, "now"),
}


def is_retried(name: str) -> bool:
    call = CALLS.get(name)
    return call is not None and call.retried


def operation(project: str, name: str, args: Any) -> tuple[Callable[[], Operation], bool]:
    """The operation ``name`` with ``args``, and whether it writes; BadRequest if either is
    not one this store knows."""
    call = CALLS.get(name)
    if call is None:
        raise bad_request(f"Unknown call {name!r}.", "name")
    if not isinstance(args, dict):
        raise bad_request("A call's arguments are a JSON object.")
    kwargs = dict(args)
    namespace = kwargs.pop("namespace", "")
    if namespace != "":
        check_id(namespace, "namespace")
    check_arguments(name, call.arguments, kwargs)
    if call.clock is not None:
        now = time.time()
        kwargs[call.clock] = int(now * 1000) if call.clock == "now_ms" else now
    return (lambda: call.make(project, namespace, **kwargs)), call.write
