"""A fake Responses API that keeps a prompt cache per account and model, and, as OpenAI
does, reads back only the reasoning its own account encrypted.

An account is the bearer key a request comes with. A request's prompt is its
instructions, tools and input items; the usage it reports counts as cached the tokens of
the longest prefix (in whole items) that this account and model were sent before (a
token: four characters of an item's JSON). Each answer holds a reasoning item whose
``encrypted_content`` names the account; with ``refuse_foreign`` a request that carries
another account's is refused, as OpenAI refuses it. A model in ``failing`` answers 500.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route


def tokens(value: Any) -> int:
    return max(1, len(json.dumps(value, sort_keys=True)) // 4)


class CachingUpstream:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []  # (account, body)
        self.failing: set[str] = set()
        self.refuse_foreign = True
        self.reasoning = True  # each answer holds a reasoning item
        self._seen: dict[tuple[str, str], set[str]] = {}
        self._lock = threading.Lock()

    def reset(self) -> None:
        """Forget every request and every cached prefix."""
        with self._lock:
            self.requests.clear()
            self._seen.clear()
        self.failing.clear()

    @staticmethod
    def _account(request: Request) -> str:
        return request.headers.get("authorization", "").removeprefix("Bearer ")[-6:]

    def _cached(self, account: str, body: dict[str, Any]) -> tuple[int, int]:
        """The prompt's tokens, and those of its longest prefix seen on ``account``; the
        prompt's every prefix is seen from now on."""
        head = {"instructions": body.get("instructions"), "tools": body.get("tools")}
        digest = hashlib.sha256(json.dumps(head, sort_keys=True).encode())
        total, cached = tokens(head), 0
        seen = self._seen.setdefault((account, body["model"]), set())
        prefixes = []
        for item in body["input"]:
            digest.update(json.dumps(item, sort_keys=True).encode())
            total += tokens(item)
            prefix = digest.hexdigest()
            prefixes.append(prefix)
            if prefix in seen:
                cached = total
        seen.update(prefixes)
        return total, cached

    async def responses(self, request: Request) -> Response:
        body = await request.json()
        account = self._account(request)
        with self._lock:
            self.requests.append((account, body))
            number = len(self.requests)
            if body["model"] in self.failing:
                return JSONResponse({"error": {"message": "down", "type": "server_error"}}, 500)
            foreign = [
                item
                for item in body["input"]
                if item.get("type") == "reasoning"
                and not str(item.get("encrypted_content", "")).startswith(f"enc:{account}:")
            ]
            if foreign and self.refuse_foreign:
                error = {
                    "message": "The encrypted content could not be verified.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_encrypted_content",
                }
                return JSONResponse({"error": error}, 400)
            total, cached = self._cached(account, body)
        texts = [i for i in body["input"] if i.get("role") == "user"]
        said = texts[-1]["content"] if texts else ""
        said = said if isinstance(said, str) else said[0].get("text", "")
        reasoning = {
            "id": f"rs_{number}",
            "type": "reasoning",
            "summary": [],
            "encrypted_content": f"enc:{account}:{number}",
        }
        output = [
            *([reasoning] if self.reasoning else []),
            {
                "id": f"msg_{number}",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": f"noted: {said}", "annotations": []}],
            },
        ]
        usage = {
            "input_tokens": total,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 2},
            "total_tokens": total + 5,
        }
        response = {
            "id": f"resp_{number}",
            "object": "response",
            "status": "completed",
            "output": output,
            "usage": usage,
        }
        if not body.get("stream"):
            return JSONResponse(response)
        return StreamingResponse(self._events(response), media_type="text/event-stream")

    async def compact(self, request: Request) -> Response:
        """Compacts into an item only this account can read; a model in ``failing`` answers 500."""
        body = await request.json()
        account = self._account(request)
        with self._lock:
            self.requests.append((account, body))
        if body["model"] in self.failing:
            return JSONResponse({"error": {"message": "down", "type": "server_error"}}, 500)
        item = {"id": "cmp_1", "type": "compaction", "encrypted_content": f"enc:{account}:cmp"}
        usage = {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7}
        return JSONResponse({"id": "resp_cmp", "object": "response.compaction", "created_at": 1,
                             "output": [item], "usage": usage})  # fmt: skip

    async def input_tokens(self, request: Request) -> Response:
        """Counts the input's tokens as an answer would."""
        body = await request.json()
        account = self._account(request)
        with self._lock:
            self.requests.append((account, body))
        counted = sum(tokens(item) for item in body["input"])
        return JSONResponse({"object": "response.input_tokens", "input_tokens": counted})

    @staticmethod
    async def _events(response: dict[str, Any]) -> AsyncIterator[bytes]:
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": {**response, "output": []}}
        ]
        for index, item in enumerate(response["output"]):
            opened = {**item, "content": []} if item["type"] == "message" else item
            events.append({"type": "response.output_item.added", "output_index": index,
                           "item": opened})  # fmt: skip
            if item["type"] == "message":
                text = item["content"][0]["text"]
                events.append({"type": "response.output_text.delta", "item_id": item["id"],
                               "output_index": index, "content_index": 0, "delta": text,
                               "logprobs": []})  # fmt: skip
            events.append({"type": "response.output_item.done", "output_index": index,
                           "item": item})  # fmt: skip
        events.append({"type": "response.completed", "response": response})
        for number, event in enumerate(events):
            data = json.dumps({**event, "sequence_number": number})
            yield f"event: {event['type']}\ndata: {data}\n\n".encode()

    @property
    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/responses", self.responses, methods=["POST"]),
                Route("/v1/responses/compact", self.compact, methods=["POST"]),
                Route("/v1/responses/input_tokens", self.input_tokens, methods=["POST"]),
            ]
        )
