"""The agent Store through a gateway's ``/v1/store/`` HTTP API: the same methods, remotely.

Reads and idempotent writes (appends of messages that all carry ids, updates, deletes,
clears, state, bindings) are retried with backoff on network errors, 429 and 5xx; a
write that is not idempotent (a create, an append without ids) is sent once.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import Any
from urllib.parse import quote

import httpx

from .calls import is_retried
from .errors import STATUS, StoreError
from .models import AgentConversation, Message, NewMessage, Page

RETRIES = 3
BACKOFF_SECONDS = 0.2


def _time(value: str | None) -> float | None:
    return None if value is None else datetime.fromisoformat(value).timestamp()


def conversation_from_json(data: dict[str, Any]) -> AgentConversation:
    return AgentConversation(
        data["conversationId"],
        data["metadata"],
        _time(data["createdAt"]) or 0.0,
        _time(data["updatedAt"]) or 0.0,
        data["messageCount"],
        _time(data["lastMessageAt"]),
    )


def message_from_json(data: dict[str, Any]) -> Message:
    return Message(
        data["messageId"],
        data["conversationId"],
        int(data["seq"]),
        data["role"],
        data["type"],
        data["payload"],
        data["metadata"],
        _time(data["createdAt"]) or 0.0,
        _time(data["updatedAt"]) or 0.0,
    )


def _segment(value: str) -> str:
    return quote(value, safe="")


class RemoteAgentStore:
    """An :class:`AgentStore` on another machine: ``connect(base_url, api_key=...)``."""

    def __init__(self, client: httpx.AsyncClient, sync_client: httpx.Client | None = None) -> None:
        self._client = client
        self._sync_client = sync_client

    @classmethod
    def connect(cls, base_url: str, *, api_key: str | None = None) -> RemoteAgentStore:
        options: dict[str, Any] = {
            "base_url": base_url.rstrip("/") + "/v1/store",
            "headers": {"authorization": f"Bearer {api_key}"} if api_key else {},
            "timeout": 30,
        }
        return cls(httpx.AsyncClient(**options), httpx.Client(**options))

    async def close(self) -> None:
        await self._client.aclose()
        if self._sync_client is not None:
            self._sync_client.close()

    async def call(self, name: str, args: dict[str, Any]) -> Any:
        """Run the framework adapters' operation ``name`` (see :mod:`.calls`) remotely."""
        path = f"/calls/{_segment(name)}"
        data = await self._call("POST", path, retry=is_retried(name), json=args)
        return data["result"]

    def call_sync(self, name: str, args: dict[str, Any]) -> Any:
        """:meth:`call` for code without an event loop (LangGraph's synchronous methods)."""
        if self._sync_client is None:
            raise RuntimeError("This client was made without a synchronous connection.")
        attempts = RETRIES if is_retried(name) else 1
        for attempt in range(attempts):
            try:
                response = self._sync_client.post(f"/calls/{_segment(name)}", json=args)
            except httpx.HTTPError as error:
                failure = transport_error(error)
            else:
                refused = failure_of(response)
                if refused is None:
                    return response.json()["result"]
                failure = refused
            if attempt + 1 < attempts:
                time.sleep(BACKOFF_SECONDS * 2**attempt)
        raise failure

    async def _call(
        self, method: str, path: str, *, retry: bool, json: Any = None, **params: Any
    ) -> Any:
        query = {key: value for key, value in params.items() if value is not None}
        attempts = RETRIES if retry else 1
        for attempt in range(attempts):
            try:
                response = await self._client.request(method, path, json=json, params=query)
            except httpx.HTTPError as error:
                failure = transport_error(error)
            else:
                refused = failure_of(response)
                if refused is None:
                    return None if response.status_code == 204 else response.json()
                failure = refused
            if attempt + 1 < attempts:
                await asyncio.sleep(BACKOFF_SECONDS * 2**attempt)
        raise failure

    # -- conversations -----------------------------------------------------------------

    async def create_conversation(
        self, conversation_id: str | None = None, metadata: dict[str, Any] | None = None
    ) -> AgentConversation:
        body = {"conversationId": conversation_id, "metadata": metadata}
        data = await self._call("POST", "/conversations", retry=False, json=body)
        return conversation_from_json(data)

    async def get_conversation(self, conversation_id: str) -> AgentConversation | None:
        try:
            data = await self._call(
                "GET", f"/conversations/{_segment(conversation_id)}", retry=True
            )
        except StoreError as error:
            if error.code == "NotFound":
                return None
            raise
        return conversation_from_json(data)

    async def list_conversations(self, limit: int = 20, cursor: str | None = None) -> Page:
        data = await self._call("GET", "/conversations", retry=True, limit=limit, cursor=cursor)
        return Page([conversation_from_json(c) for c in data["items"]], data["nextCursor"])

    async def update_conversation(
        self, conversation_id: str, metadata: dict[str, Any]
    ) -> AgentConversation:
        path = f"/conversations/{_segment(conversation_id)}"
        data = await self._call("PATCH", path, retry=True, json={"metadata": metadata})
        return conversation_from_json(data)

    async def delete_conversation(self, conversation_id: str) -> None:
        await self._call("DELETE", f"/conversations/{_segment(conversation_id)}", retry=True)

    # -- messages ----------------------------------------------------------------------

    async def append_messages(
        self, conversation_id: str, messages: list[NewMessage]
    ) -> list[Message]:
        body = {
            "messages": [
                {
                    "payload": m.payload,
                    "role": m.role,
                    "type": m.type,
                    "metadata": m.metadata,
                    "messageId": m.message_id,
                }
                for m in messages
            ]
        }
        idempotent = all(m.message_id for m in messages)
        path = f"/conversations/{_segment(conversation_id)}/messages"
        data = await self._call("POST", path, retry=idempotent, json=body)
        return [message_from_json(m) for m in data["items"]]

    async def append_message(
        self,
        conversation_id: str,
        payload: Any,
        role: str | None = None,
        type: str | None = None,
        metadata: dict[str, Any] | None = None,
        message_id: str | None = None,
    ) -> Message:
        message = NewMessage(payload, role, type, metadata, message_id)
        return (await self.append_messages(conversation_id, [message]))[0]

    async def get_message(self, message_id: str) -> Message | None:
        try:
            data = await self._call("GET", f"/messages/{_segment(message_id)}", retry=True)
        except StoreError as error:
            if error.code == "NotFound":
                return None
            raise
        return message_from_json(data)

    async def list_messages(
        self, conversation_id: str, order: str = "asc", limit: int = 50, cursor: str | None = None
    ) -> Page:
        path = f"/conversations/{_segment(conversation_id)}/messages"
        data = await self._call("GET", path, retry=True, order=order, limit=limit, cursor=cursor)
        return Page([message_from_json(m) for m in data["items"]], data["nextCursor"])

    async def update_message(self, message_id: str, /, **fields: Any) -> Message:
        data = await self._call(
            "PATCH", f"/messages/{_segment(message_id)}", retry=True, json=fields
        )
        return message_from_json(data)

    async def delete_message(self, message_id: str) -> None:
        await self._call("DELETE", f"/messages/{_segment(message_id)}", retry=True)

    async def pop_message(self, conversation_id: str) -> Message | None:
        path = f"/conversations/{_segment(conversation_id)}/pop"
        data = await self._call("POST", path, retry=False)  # a retried pop could pop twice
        return None if data["message"] is None else message_from_json(data["message"])

    async def clear_messages(self, conversation_id: str) -> None:
        path = f"/conversations/{_segment(conversation_id)}/clear"
        await self._call("POST", path, retry=True)

    # -- state and bindings ------------------------------------------------------------

    def _state(self, conversation_id: str, key: str) -> str:
        return f"/conversations/{_segment(conversation_id)}/state/{_segment(key)}"

    async def state_get(self, conversation_id: str, key: str) -> Any:
        data = await self._call("GET", self._state(conversation_id, key), retry=True)
        return data["value"]

    async def state_set(self, conversation_id: str, key: str, value: Any) -> None:
        await self._call(
            "PUT", self._state(conversation_id, key), retry=True, json={"value": value}
        )

    async def state_delete(self, conversation_id: str, key: str) -> None:
        await self._call("DELETE", self._state(conversation_id, key), retry=True)

    async def claude_session_binding(self, conversation_id: str) -> str:
        body = {"conversationId": conversation_id}
        data = await self._call("POST", "/claude-bindings", retry=True, json=body)
        session_id: str = data["sessionId"]
        return session_id


def transport_error(error: httpx.HTTPError) -> StoreError:
    if isinstance(error, httpx.TimeoutException):
        return StoreError("TimeoutError", str(error) or "timed out", error=repr(error))
    return StoreError("NetworkError", str(error) or "network error", error=repr(error))


def failure_of(response: httpx.Response) -> StoreError | None:
    """``None`` for a success; the error to retry (429, 502 to 504); else raise it."""
    if response.status_code < 400:
        return None
    failure = _error_of(response)
    if response.status_code not in (429, 502, 503, 504):
        raise failure
    return failure


def _error_of(response: httpx.Response) -> StoreError:
    try:
        error = response.json()["error"]
        code, message = error.get("code"), error.get("message", response.text)
        param = error.get("param")
    except (ValueError, KeyError, TypeError, AttributeError):
        code, message, param = None, response.text, None
    if code not in STATUS:
        by_status = {status: name for name, status in STATUS.items()}
        code = by_status.get(response.status_code, "UnknownError")
    return StoreError(
        code,
        message,
        status=response.status_code,
        error=response.text[:500],
        param=param if isinstance(param, str) else None,
    )
