"""A finished turn's response object -> a ``chat.completion``, with no I/O."""

from __future__ import annotations

from session import Item

# Why a Responses turn stopped early -> Chat's finish reason.
_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}


def completion_id(response_id: str) -> str:
    """The chat completion's id, made from the turn's (``resp_x`` -> ``chatcmpl-x``)."""
    return "chatcmpl-" + response_id.removeprefix("resp_")


def finish_reason(response: Item, called: bool) -> str:
    """``stop``, ``length``, ``tool_calls`` or ``content_filter``, from how the turn ended."""
    if response.get("status") == "incomplete":
        reason = (response.get("incomplete_details") or {}).get("reason")
        return _INCOMPLETE.get(str(reason), "length")
    return "tool_calls" if called else "stop"


def chat_usage(usage: Item | None) -> Item | None:
    """Responses usage -> Chat's, with cached and reasoning tokens in their details."""
    if not usage:
        return None
    prompt = int(usage.get("input_tokens") or 0)
    completion = int(usage.get("output_tokens") or 0)
    cached = (usage.get("input_tokens_details") or {}).get("cached_tokens") or 0
    reasoning = (usage.get("output_tokens_details") or {}).get("reasoning_tokens") or 0
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": int(usage.get("total_tokens") or prompt + completion),
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": reasoning,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def tool_call(item: Item) -> Item | None:
    """A function (or custom) tool call item as a Chat ``tool_calls`` entry."""
    if item.get("type") == "function_call":
        function = {"name": item.get("name", ""), "arguments": item.get("arguments", "")}
        return {"id": item.get("call_id", ""), "type": "function", "function": function}
    if item.get("type") == "custom_tool_call":
        custom = {"name": item.get("name", ""), "input": item.get("input", "")}
        return {"id": item.get("call_id", ""), "type": "custom", "custom": custom}
    return None


def reasoning_text(item: Item) -> str:
    """A reasoning item's text: its reasoning parts, else its summary."""
    for key, kind in (("content", "reasoning_text"), ("summary", "summary_text")):
        texts = [
            part.get("text", "")
            for part in item.get(key) or []
            if isinstance(part, dict) and part.get("type") == kind
        ]
        if texts:
            return "\n".join(texts)
    return ""


def chat_logprob(entry: Item) -> Item:
    """One token's log probabilities, Responses' -> Chat's (the same fields)."""
    top = [
        {"token": t.get("token", ""), "logprob": t.get("logprob", 0.0), "bytes": t.get("bytes")}
        for t in entry.get("top_logprobs") or []
    ]
    return {
        "token": entry.get("token", ""),
        "logprob": entry.get("logprob", 0.0),
        "bytes": entry.get("bytes"),
        "top_logprobs": top,
    }


def _message(output: list[Item]) -> tuple[Item, list[Item]]:
    texts: list[str] = []
    refusals: list[str] = []
    reasoning: list[str] = []
    calls: list[Item] = []
    annotations: list[Item] = []
    logprobs: list[Item] = []
    for item in output:
        if item.get("type") == "message":
            for part in item.get("content") or []:
                if part.get("type") == "output_text":
                    texts.append(part.get("text", ""))
                    logprobs += [chat_logprob(entry) for entry in part.get("logprobs") or []]
                    annotations += [
                        {"type": "url_citation", "url_citation": note}
                        for note in _citations(part.get("annotations") or [])
                    ]
                elif part.get("type") == "refusal":
                    refusals.append(part.get("refusal", ""))
        elif item.get("type") == "reasoning":
            if text := reasoning_text(item):
                reasoning.append(text)
        elif (call := tool_call(item)) is not None:
            calls.append(call)
    message: Item = {
        "role": "assistant",
        "content": "".join(texts) if texts or not (calls or refusals) else None,
        "refusal": "".join(refusals) if refusals else None,
        "annotations": annotations,
    }
    if calls:
        message["tool_calls"] = calls
    if reasoning:
        message["reasoning_content"] = "\n".join(reasoning)
    return message, logprobs


def _citations(annotations: list[Item]) -> list[Item]:
    return [
        {key: note.get(key) for key in ("start_index", "end_index", "title", "url")}
        for note in annotations
        if isinstance(note, dict) and note.get("type") == "url_citation"
    ]


def chat_completion(response: Item, model: str, *, logprobs: bool = False) -> Item:
    """The ``chat.completion`` for a finished turn's response object; ``model`` as the
    client named it; ``logprobs``: the client asked for them."""
    message, tokens = _message(response.get("output") or [])
    choice: Item = {
        "index": 0,
        "message": message,
        "logprobs": {"content": tokens, "refusal": None} if logprobs else None,
        "finish_reason": finish_reason(response, "tool_calls" in message),
    }
    service_tier = response.get("service_tier")
    return {
        "id": completion_id(str(response.get("id", ""))),
        "object": "chat.completion",
        "created": int(response.get("created_at") or 0),
        "model": model,
        "choices": [choice],
        "usage": chat_usage(response.get("usage")),
        "service_tier": service_tier
        if service_tier in ("default", "flex", "scale", "priority", "fast")
        else None,
        "system_fingerprint": None,
    }
