"""Stream-length benchmark: CPU per chunk of a streamed Chat Completions answer, by length.

    python -m bench.stream_length [--sizes 1000,10000,100000,400000] [--kinds text,logprobs,...]
                                  [--no-gc]

Each answer is ``size`` chunks of 4 characters, fed through the chat-stream translation as
the gateway does it (each ``data`` parsed, translated to Responses events, each event encoded
to JSON), with no network in between. CPU per chunk must stay flat as answers grow: a ratio
well above 1 in the last columns means work that grows with the answer so far. With
logprobs, the step up to about 100k chunks is the interpreter's cyclic garbage collector
walking the token objects kept so far (``--no-gc`` leaves it out); past it the ratio is flat.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable

import orjson

from gateway.upstream.results import Item
from gateway.upstream.translation.output_builder import ToolName
from gateway.upstream.wires.chat.response import ChatTranslator

PIECE = "abc "
TOOL = "lookup"


def _choice(delta: Item, logprobs: bool, finish: str | None) -> Item:
    choice: Item = {"index": 0, "delta": delta, "finish_reason": finish}
    if logprobs:
        entry = {"token": PIECE, "logprob": -0.25, "bytes": list(PIECE.encode())}
        choice["logprobs"] = {"content": [{**entry, "top_logprobs": [entry]}]}
    return choice


def _data(delta: Item, logprobs: bool = False, finish: str | None = None) -> str:
    chunk = {"object": "chat.completion.chunk", "choices": [_choice(delta, logprobs, finish)]}
    return orjson.dumps(chunk).decode()


def _tool_delta(arguments: str, opening: bool = False) -> Item:
    call: Item = {"index": 0, "function": {"arguments": arguments}}
    if opening:
        call.update(id="call_1", type="function")
        call["function"]["name"] = TOOL
    return {"tool_calls": [call]}


# kind -> (the first chunk's data, every later chunk's data)
KINDS: dict[str, tuple[str, str]] = {
    "text": (_data({"role": "assistant", "content": PIECE}), _data({"content": PIECE})),
    "logprobs": (
        _data({"role": "assistant", "content": PIECE}, True),
        _data({"content": PIECE}, True),
    ),
    "reasoning": (_data({"reasoning_content": PIECE}), _data({"reasoning_content": PIECE})),
    "arguments": (_data(_tool_delta(PIECE, opening=True)), _data(_tool_delta(PIECE))),
}
FINISH = _data({}, finish="stop")


def translate(kind: str, size: int) -> tuple[float, Item]:
    """Translate a ``size``-chunk answer of ``kind``; its CPU seconds and its output item."""
    first, later = KINDS[kind]
    translator = ChatTranslator({TOOL: ToolName(TOOL)})
    encode: Callable[[Item], bytes] = orjson.dumps
    encoded = 0
    started = time.process_time()
    for number in range(size):
        for event in translator.chunk(orjson.loads(later if number else first)):
            encoded += len(encode(event))
    for event in translator.chunk(orjson.loads(FINISH)):
        encoded += len(encode(event))
    closing, result = translator.finish()
    for event in closing:
        encoded += len(encode(event))
    seconds = time.process_time() - started
    assert encoded > size * len(PIECE)
    return seconds, result.output[-1]


def _whole(item: Item) -> str:
    if item["type"] == "function_call":
        return str(item["arguments"])
    return str(item["content"][0]["text"])


def run(sizes: list[int], kinds: list[str]) -> str:
    """The table: µs of CPU per chunk for each size, and its ratio to the smallest size's."""
    header = f"{'chunks':>8}" + "".join(f" {kind + ' µs':>14} {'ratio':>6}" for kind in kinds)
    lines = [header]
    base: dict[str, float] = {}
    for size in sizes:
        row = f"{size:>8}"
        for kind in kinds:
            seconds, item = translate(kind, size)
            if _whole(item) != PIECE * size:
                raise AssertionError(f"{kind}: the {size}-chunk answer did not reassemble")
            per_chunk = seconds / size * 1e6
            base.setdefault(kind, per_chunk)
            row += f" {per_chunk:>14.2f} {per_chunk / base[kind]:>6.2f}"
        lines.append(row)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000,400000")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--no-gc", action="store_true", help="measure without the cyclic GC")
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    kinds = args.kinds.split(",")
    unknown = set(kinds) - set(KINDS)
    if unknown:
        parser.error(f"unknown kinds: {', '.join(sorted(unknown))} (known: {', '.join(KINDS)})")
    print(f"CPU µs per {len(PIECE)}-character chunk; ratio to the {sizes[0]}-chunk answer")
    if args.no_gc:
        gc.disable()
    try:
        print(run(sizes, kinds))
    finally:
        gc.enable()


if __name__ == "__main__":
    main()
