"""WebSocket lanes: ``stream_id`` runs responses side by side on one socket, each lane in
order with its own memory; and the connection's lifetime and lane limits."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect
from websockets.sync.connection import Connection

from gateway import create_app

from .conftest import Gateway, gateway_config
from .fake_upstream import FakeUpstream, Reply
from .servers import serve
from .test_websocket import TERMINAL, raw_turn, ws_url

pytestmark = [pytest.mark.api]


def create(text: str, lane: str | None = None, **extra: Any) -> str:
    frame: dict[str, Any] = {"type": "response.create", "model": "chat-model", "input": text}
    if lane is not None:
        frame["stream_id"] = lane
    return json.dumps({**frame, **extra})


def receive(socket: Connection) -> dict[str, Any]:
    event: dict[str, Any] = json.loads(socket.recv(timeout=30))
    return event


def until_delta(socket: Connection) -> list[dict[str, Any]]:
    """The events of a response up to its first text delta (where the fake holds it)."""
    events = [receive(socket)]
    while events[-1]["type"] != "response.output_text.delta":
        events.append(receive(socket))
    return events


def until_end(socket: Connection, lane: str) -> list[dict[str, Any]]:
    """The events of ``lane``'s current response, up to its end (others must not come)."""
    events = []
    while True:
        event = receive(socket)
        assert event.get("stream_id") == lane, event
        events.append(event)
        if event["type"] in TERMINAL:
            return events


@pytest.fixture
def held() -> Iterator[threading.Event]:
    gate = threading.Event()
    yield gate
    gate.set()  # a failed test leaves no upstream stream waiting


def test_two_lanes_run_side_by_side_and_every_event_names_its_lane(
    gateway: Gateway, held: threading.Event
) -> None:
    gateway.fake.script(Reply(text="a slow answer in pieces", hold_after=2, gate=held))
    with connect(ws_url(gateway.url)) as socket:
        socket.send(create("first, slowly", "a"))
        started = until_delta(socket)  # then held upstream
        assert [e["type"] for e in started][-1] == "response.output_text.delta"
        assert {e["stream_id"] for e in started} == {"a"}
        socket.send(create("second, at once", "b"))
        other = until_end(socket, "b")  # the whole of b while a waits upstream
        assert other[-1]["type"] == "response.completed"
        assert other[-1]["response"]["output"][0]["content"][0]["text"] == (
            "reply to: second, at once"
        )
        assert [e["sequence_number"] for e in other] == list(range(len(other)))
        held.set()
        rest = until_end(socket, "a")
        assert rest[-1]["response"]["output"][0]["content"][0]["text"] == (
            "a slow answer in pieces"
        )
        sequence = [e["sequence_number"] for e in started + rest]
        assert sequence == list(range(len(sequence)))


def test_the_sdk_parses_lane_events_strictly(gateway: Gateway, held: threading.Event) -> None:
    gateway.fake.script(Reply(text="held answer", hold_after=2, gate=held))
    with gateway.client().responses.connect() as connection:
        connection.response.create(model="chat-model", input="one", stream_id="one")
        events = iter(connection)
        first = [next(events)]
        while first[-1].type != "response.output_text.delta":
            first.append(next(events))
        connection.response.create(model="chat-model", input="two", stream_id="two")
        seen: dict[str, list[Any]] = {"one": first, "two": []}
        for event in events:
            lane = event.stream_id
            assert lane in seen, event
            seen[lane].append(event)
            if lane == "two" and event.type == "response.completed":
                held.set()
            if all(e and e[-1].type == "response.completed" for e in seen.values()):
                break
    assert seen["two"][-1].response.output_text == "reply to: two"
    assert seen["one"][-1].response.output_text == "held answer"
    two_done = seen["two"][-1].response.created_at
    assert two_done >= seen["one"][0].response.created_at


def test_a_lane_serves_its_frames_first_in_first_out(
    gateway: Gateway, held: threading.Event
) -> None:
    gateway.fake.script(Reply(text="first in the lane", hold_after=2, gate=held))
    with connect(ws_url(gateway.url)) as socket:
        socket.send(create("a1", "a"))
        started = until_delta(socket)
        socket.send(create("a2", "a"))  # waits behind a1
        socket.send(create("b1", "b"))  # read after a2, and served at once
        assert until_end(socket, "b")[-1]["type"] == "response.completed"
        asked = [m["messages"][-1]["content"] for m in gateway.fake.requests]
        assert asked == ["a1", "b1"]  # a2 did not start while a1 ran
        held.set()
        first = until_end(socket, "a")
        second = until_end(socket, "a")
    assert first[-1]["response"]["id"] == started[0]["response"]["id"]
    assert second[-1]["response"]["output"][0]["content"][0]["text"] == "reply to: a2"
    assert [m["messages"][-1]["content"] for m in gateway.fake.requests] == ["a1", "b1", "a2"]


def test_a_failure_in_one_lane_forgets_only_that_lanes_response(gateway: Gateway) -> None:
    unstored = {"store": False}
    with connect(ws_url(gateway.url)) as socket:
        socket.send(create("I am lane a.", "a", **unstored))
        a = until_end(socket, "a")[-1]["response"]["id"]
        socket.send(create("I am lane b.", "b", **unstored))
        b = until_end(socket, "b")[-1]["response"]["id"]
        gateway.fake.script(Reply(status=500))
        socket.send(create("and now?", "a", previous_response_id=a, **unstored))
        failed = until_end(socket, "a")
        assert failed[-1]["type"] in ("error", "response.failed")
        socket.send(create("again?", "a", previous_response_id=a, **unstored))
        [gone] = until_end(socket, "a")
        assert gone["status"] == 400 and gone["stream_id"] == "a"
        assert gone["error"]["code"] == "previous_response_not_found"
        assert gone["error"]["param"] == "previous_response_id"
        socket.send(create("still b?", "b", previous_response_id=b, **unstored))
        kept = until_end(socket, "b")
        assert kept[-1]["type"] == "response.completed"
        sent = [(m["role"], m["content"]) for m in gateway.fake.last["messages"]]
        assert sent == [
            ("user", "I am lane b."),
            ("assistant", "reply to: I am lane b."),
            ("user", "still b?"),
        ]


def test_a_new_lane_continues_another_lanes_response_which_keeps_it(gateway: Gateway) -> None:
    unstored = {"store": False}
    with connect(ws_url(gateway.url)) as socket:
        socket.send(create("The root.", "main", **unstored))
        root = until_end(socket, "main")[-1]["response"]["id"]
        socket.send(create("A fork.", "fork", previous_response_id=root, **unstored))
        assert until_end(socket, "fork")[-1]["type"] == "response.completed"
        forked = [m["content"] for m in gateway.fake.last["messages"]]
        assert forked == ["The root.", "reply to: The root.", "A fork."]
        socket.send(create("The trunk goes on.", "main", previous_response_id=root, **unstored))
        latest = until_end(socket, "main")[-1]["response"]["id"]
        trunk = [m["content"] for m in gateway.fake.last["messages"]]
        assert trunk == ["The root.", "reply to: The root.", "The trunk goes on."]
        # Without a stream_id, the unnamed lane continues a named lane's response too; a
        # lane remembers only its latest one.
        frame = {"type": "response.create", "model": "chat-model", "input": "From outside."}
        unnamed = raw_turn(socket, {**frame, "previous_response_id": latest, "store": False})
        assert unnamed[-1]["type"] == "response.completed" and "stream_id" not in unnamed[-1]
        past = raw_turn(socket, {**frame, "previous_response_id": root, "store": False})
        assert past[0]["error"]["code"] == "previous_response_not_found"


def lane_gateway(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path, **server: Any
) -> Iterator[str]:
    config = gateway_config(fake_upstream[1], tmp_path / "w.db", server=server)
    with serve(create_app(config)) as url:
        yield url


def test_a_connection_names_at_most_its_lanes(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    for url in lane_gateway(fake_upstream, tmp_path, websocket_max_streams=2):
        with connect(ws_url(url)) as socket:
            for lane in ("x", "y", "x"):
                socket.send(create(f"on {lane}", lane, model="echo"))
                assert until_end(socket, lane)[-1]["type"] == "response.completed"
            socket.send(create("one too many", "z", model="echo"))
            assert receive(socket) == {
                "type": "error",
                "status": 400,
                "error": {
                    "message": "This WebSocket has named 2 stream_id lanes, its limit "
                    "(server.websocket_max_streams). Reuse one, or open a new connection.",
                    "type": "invalid_request_error",
                    "param": "stream_id",
                    "code": "websocket_stream_limit_reached",
                },
                "stream_id": "z",
            }
            socket.send(create("bad lane", "", model="echo"))
            assert receive(socket)["error"]["param"] == "stream_id"
            assert raw_turn(socket, json.loads(create("unnamed", model="echo")))[-1]["type"] == (
                "response.completed"
            )


def test_responses_in_flight_wait_for_a_place(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path, held: threading.Event
) -> None:
    fake = fake_upstream[0]
    fake.script(Reply(text="alone in flight", hold_after=2, gate=held))
    for url in lane_gateway(fake_upstream, tmp_path, websocket_max_in_flight=1):
        with connect(ws_url(url)) as socket:
            socket.send(create("a", "a"))
            until_delta(socket)
            socket.send(create("b", "b"))
            with pytest.raises(TimeoutError):
                socket.recv(timeout=0.5)  # b waits for a's place
            assert len(fake.requests) == 1
            held.set()
            assert until_end(socket, "a")[-1]["type"] == "response.completed"
            assert until_end(socket, "b")[-1]["type"] == "response.completed"


def close_code(socket: Connection) -> int | None:
    with pytest.raises(ConnectionClosed) as closed:
        socket.recv(timeout=30)
    return closed.value.rcvd.code if closed.value.rcvd else None


def test_the_connection_lifetime_ends_it_after_its_running_lanes(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path, held: threading.Event
) -> None:
    fake_upstream[0].script(Reply(text="running at the end", hold_after=2, gate=held))
    for url in lane_gateway(fake_upstream, tmp_path, websocket_connection_seconds=1):
        with connect(ws_url(url)) as socket:
            socket.send(create("running", "a"))
            until_delta(socket)
            socket.send(create("waiting", "a"))
            refused = receive(socket)  # once the second is up, the waiting frame is refused
            limit = {
                "message": "Responses websocket connection limit reached (1 s). "
                "Create a new websocket connection to continue.",
                "type": "invalid_request_error",
                "param": None,
                "code": "websocket_connection_limit_reached",
            }
            assert refused == {"type": "error", "status": 400, "error": limit, "stream_id": "a"}
            held.set()
            assert until_end(socket, "a")[-1]["type"] == "response.completed"
            assert receive(socket) == {"type": "error", "status": 400, "error": limit}
            assert close_code(socket) == 1000
        with connect(ws_url(url)) as socket:  # an idle one is told as well
            assert raw_turn(socket, json.loads(create("quick", model="echo")))[-1]["type"] == (
                "response.completed"
            )
            assert receive(socket)["error"]["code"] == "websocket_connection_limit_reached"
            assert close_code(socket) == 1000


def test_the_sdk_reads_the_connection_limit_as_an_error_event(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    for url in lane_gateway(fake_upstream, tmp_path, websocket_connection_seconds=1):
        client = openai.OpenAI(
            base_url=f"{url}/v1", api_key="unused", _strict_response_validation=True
        )
        with client.responses.connect() as connection:
            [error] = list(connection)
            assert error.type == "error" and error.status == 400
            assert error.error.code == "websocket_connection_limit_reached"
        client.close()


def test_a_lane_whose_client_leaves_finishes_its_turn_and_stores_it(
    gateway: Gateway, held: threading.Event
) -> None:
    gateway.fake.script(Reply(text="finished without its client", hold_after=2, gate=held))
    with connect(ws_url(gateway.url)) as socket:
        socket.send(create("left behind", "a"))
        socket.send(create("never started", "a"))
        response_id = until_delta(socket)[0]["response"]["id"]
    held.set()  # the socket is closed: the held turn goes on alone
    client = gateway.client()
    for _ in range(200):  # bounded wait for the turn to end without its client
        stored = client.responses.retrieve(response_id)
        if stored.status != "in_progress":
            break
        threading.Event().wait(0.05)
    assert stored.status == "completed"
    assert stored.output_text == "finished without its client"
    asked = [m["messages"][-1]["content"] for m in gateway.fake.requests]
    assert asked == ["left behind"]  # the frame waiting behind it was dropped


def test_a_lane_refuses_frames_past_those_it_can_hold_waiting(
    gateway: Gateway, held: threading.Event
) -> None:
    gateway.fake.script(Reply(text="holding the lane", hold_after=2, gate=held))
    with connect(ws_url(gateway.url)) as socket:
        socket.send(create("running", "a"))
        until_delta(socket)
        for n in range(65):  # 64 wait behind it, the next is one too many
            socket.send(create(f"waiting {n}", "a", model="echo"))
        refused = receive(socket)
    assert refused["status"] == 429 and refused["stream_id"] == "a"
    assert refused["error"]["code"] == "websocket_stream_queue_full"
    assert refused["error"]["param"] == "stream_id"
