"""A LangGraph checkpointer on the gateway's store (see :mod:`session.adapters.langgraph`)."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from .backend import Backend, OnBackend


def _json_safe(metadata: dict[str, Any]) -> dict[str, Any]:
    """The metadata entries that are plain JSON: what ``list(filter=...)`` compares."""
    safe: dict[str, Any] = {}
    for name, value in metadata.items():
        try:
            safe[name] = json.loads(json.dumps(value))
        except (TypeError, ValueError):
            continue
    return safe


def _configurable(config: RunnableConfig | None) -> dict[str, Any]:
    return dict((config or {}).get("configurable") or {})


class GatewayCheckpointer(OnBackend, BaseCheckpointSaver[int]):
    """Checkpoints and pending writes, serialised with LangGraph's ``serde``.

    ``connect(base_url, ...)`` through a gateway, or ``from_store(store, ...)`` in process.
    Async and sync methods both work; in process, call the sync ones outside the event loop
    (LangGraph does, for ``graph.invoke``).
    """

    def __init__(self, backend: Backend, *, serde: SerializerProtocol | None = None) -> None:
        BaseCheckpointSaver.__init__(self, serde=serde)
        OnBackend.__init__(self, backend)

    # -- encoding --------------------------------------------------------------------------

    def _dump(self, value: Any) -> list[str]:
        kind, data = self.serde.dumps_typed(value)
        return [kind, base64.b64encode(data).decode()]

    def _load(self, dumped: list[str]) -> Any:
        return self.serde.loads_typed((dumped[0], base64.b64decode(dumped[1])))

    def _tuple(self, row: dict[str, Any]) -> CheckpointTuple:
        where = {"thread_id": row["thread_id"], "checkpoint_ns": row["checkpoint_ns"]}
        writes = sorted(row["writes"], key=lambda w: writes_sort_key(w[3], w[0], w[1]))
        parent = row["parent_id"]
        return CheckpointTuple(
            config={"configurable": {**where, "checkpoint_id": row["checkpoint_id"]}},
            checkpoint=self._load(row["checkpoint"]),
            metadata=self._load(row["metadata"]),
            parent_config={"configurable": {**where, "checkpoint_id": parent}} if parent else None,
            pending_writes=[(w[0], w[2], self._load(w[4])) for w in writes],
        )

    def _put_args(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata
    ) -> tuple[dict[str, Any], RunnableConfig]:
        conf = _configurable(config)
        full = get_checkpoint_metadata(config, metadata)
        row = {
            "thread_id": conf["thread_id"],
            "checkpoint_ns": conf.get("checkpoint_ns", ""),
            "checkpoint_id": checkpoint["id"],
            "parent_id": conf.get("checkpoint_id"),
            "run_id": full.get("run_id"),
            "checkpoint": self._dump(checkpoint),
            "metadata": self._dump(full),
            "filter": _json_safe(dict(full)),
        }
        where = {key: row[key] for key in ("thread_id", "checkpoint_ns", "checkpoint_id")}
        return row, {"configurable": where}

    def _writes_args(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, path: str
    ) -> dict[str, Any]:
        conf = _configurable(config)
        return {
            "thread_id": conf["thread_id"],
            "checkpoint_ns": conf.get("checkpoint_ns", ""),
            "checkpoint_id": conf["checkpoint_id"],
            "task_id": task_id,
            "task_path": path,
            "writes": [
                [WRITES_IDX_MAP.get(channel, idx), channel, self._dump(value)]
                for idx, (channel, value) in enumerate(writes)
            ],
        }

    @staticmethod
    def _get_args(config: RunnableConfig) -> dict[str, Any]:
        conf = _configurable(config)
        return {
            "thread_id": conf["thread_id"],
            "checkpoint_ns": conf.get("checkpoint_ns", ""),
            "checkpoint_id": get_checkpoint_id(config),
        }

    @staticmethod
    def _list_args(
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> dict[str, Any]:
        conf = _configurable(config)
        return {
            "thread_id": conf.get("thread_id"),
            "checkpoint_ns": conf.get("checkpoint_ns"),
            "checkpoint_id": conf.get("checkpoint_id"),
            "before": get_checkpoint_id(before) if before else None,
            "filter": json.loads(json.dumps(filter)) if filter else None,
            "limit": limit,
        }

    # -- async -----------------------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        row = await self._backend.call("langgraph.get", **self._get_args(config))
        return None if row is None else self._tuple(row)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        args = self._list_args(config, filter, before, limit)
        for row in await self._backend.call("langgraph.list", **args):
            yield self._tuple(row)

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        row, stored = self._put_args(config, checkpoint, metadata)
        await self._backend.call("langgraph.put", checkpoint=row)
        return stored

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        args = self._writes_args(config, writes, task_id, task_path)
        await self._backend.call("langgraph.put_writes", **args)

    async def adelete_thread(self, thread_id: str) -> None:
        await self._backend.call("langgraph.delete_thread", thread_id=thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self._backend.call("langgraph.delete_for_runs", run_ids=list(run_ids))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await self._backend.call(
            "langgraph.copy_thread", source=source_thread_id, target=target_thread_id
        )

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await self._backend.call("langgraph.prune", thread_ids=list(thread_ids), strategy=strategy)

    # -- sync ------------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        row = self._backend.call_sync("langgraph.get", **self._get_args(config))
        return None if row is None else self._tuple(row)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        args = self._list_args(config, filter, before, limit)
        for row in self._backend.call_sync("langgraph.list", **args):
            yield self._tuple(row)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        row, stored = self._put_args(config, checkpoint, metadata)
        self._backend.call_sync("langgraph.put", checkpoint=row)
        return stored

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        args = self._writes_args(config, writes, task_id, task_path)
        self._backend.call_sync("langgraph.put_writes", **args)

    def delete_thread(self, thread_id: str) -> None:
        self._backend.call_sync("langgraph.delete_thread", thread_id=thread_id)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._backend.call_sync("langgraph.delete_for_runs", run_ids=list(run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self._backend.call_sync(
            "langgraph.copy_thread", source=source_thread_id, target=target_thread_id
        )

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self._backend.call_sync("langgraph.prune", thread_ids=list(thread_ids), strategy=strategy)
