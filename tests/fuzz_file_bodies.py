"""Hypothesis strategies for hostile requests to the Files, Vector Stores and Embeddings APIs
and for the frames of WebSocket mode.

Like :mod:`tests.fuzz_bodies`, each starts from what a valid request holds and replaces
parts with values of any JSON type; multipart forms also lose, repeat or garble their parts.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from .fuzz_bodies import HOSTILE, MESSAGE, QUERY_VALUES, TEXT, items

# Ids the tests' fixtures hold (``SEEDED_FILE``, ``SEEDED_STORE`` are replaced by the real
# ones), ids of the right shape that do not exist, and anything at all.
SEEDED_FILE, SEEDED_STORE = "<seeded file>", "<seeded store>"
SEARCHED_TEXT = b"The lighthouse keeper logs every passing ship at night."
IDS = st.one_of(
    st.sampled_from([SEEDED_FILE, SEEDED_STORE, "file-x", "vs_x", "vsfb_x", "file-", "."]),
    TEXT,
)
PURPOSES = st.one_of(
    st.sampled_from(["assistants", "batch", "fine-tune", "vision", "user_data", "evals"]), TEXT
)
FILE_NAMES = st.one_of(
    st.sampled_from(["notes.txt", "a.md", "x.pdf", "../../etc/passwd", "a\\b.txt", "", "."]),
    TEXT,
)
CONTENTS = st.one_of(
    st.binary(max_size=64),
    st.sampled_from([b"", b"%PDF-1.4\n", b"\xff\xfe\x00", b"<html><body>hi</body></html>"]),
    st.integers(64 * 1024 - 2, 64 * 1024 + 2).map(lambda n: b"x" * n),  # about the limit
)


@st.composite
def upload_forms(draw: st.DrawFn) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
    """httpx's ``data`` and ``files`` of an upload: each part there, missing or repeated."""
    data: dict[str, Any] = {}
    if draw(st.integers(0, 5)):
        data["purpose"] = draw(st.one_of(PURPOSES, st.lists(PURPOSES, min_size=2, max_size=3)))
    for name in draw(st.lists(st.sampled_from(["extra", "expires_after", "file"]), max_size=2)):
        data[name] = draw(TEXT)
    parts: list[tuple[str, Any]] = []
    for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2]))):
        field = draw(st.sampled_from(["file", "file", "file", "purpose", "upload"]))
        parts.append((field, (draw(FILE_NAMES), draw(CONTENTS), draw(CONTENT_TYPES))))
    return data, parts


CONTENT_TYPES = st.sampled_from(
    ["text/plain", "application/pdf", "application/octet-stream", "", "x/y; charset=nope"]
)
# Bodies sent as they are, under a content type of their own: forms cut short, forms with no
# boundary, boundaries that never come, JSON where a form belongs, nothing at all.
RAW_FORMS = st.one_of(
    st.tuples(
        st.sampled_from(
            [
                "multipart/form-data; boundary=b",
                "multipart/form-data",
                "multipart/form-data; boundary=",
                "multipart/form-data; boundary=" + "b" * 200,
                "application/json",
                "application/x-www-form-urlencoded",
                "text/plain",
            ]
        ),
        st.one_of(
            st.binary(max_size=80),
            st.sampled_from(
                [
                    b'--b\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nx',
                    b'--b\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nassistants'
                    b'\r\n--b\r\nContent-Disposition: form-data; name="file"; filename="a"'
                    b"\r\n\r\nhello\r\n--b--\r\n",
                    b'--b\r\nContent-Disposition: form-data; name="file"\r\n\r\nno filename'
                    b"\r\n--b--\r\n",
                    b"--b\r\nContent-Disposition: form-data\r\n\r\nno name\r\n--b--\r\n",
                    b"--b--\r\n",
                    b'{"purpose": "assistants", "file": "x"}',
                    b"purpose=assistants&file=x",
                ]
            ),
        ),
    ),
)
FILE_QUERIES = st.dictionaries(
    st.sampled_from(["purpose", "limit", "order", "after"]),
    st.one_of(QUERY_VALUES, PURPOSES, IDS),
    max_size=4,
)
VECTOR_STORE_QUERIES = st.dictionaries(
    st.sampled_from(["limit", "order", "after", "before", "filter"]),
    st.one_of(
        QUERY_VALUES, IDS, st.sampled_from(["in_progress", "completed", "failed", "cancelled"])
    ),
    max_size=4,
)

CHUNKING = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(["auto", "static", "other"])}),
    st.fixed_dictionaries(
        {
            "type": st.just("static"),
            "static": st.fixed_dictionaries(
                {},
                optional={
                    "max_chunk_size_tokens": st.one_of(st.integers(-5, 5000), HOSTILE),
                    "chunk_overlap_tokens": st.one_of(st.integers(-5, 3000), HOSTILE),
                },
            ),
        }
    ),
    HOSTILE,
)
EXPIRES = st.one_of(
    st.fixed_dictionaries(
        {"anchor": st.sampled_from(["last_active_at", "created_at"]), "days": st.integers(-1, 400)}
    ),
    HOSTILE,
)
METADATA = st.one_of(st.dictionaries(TEXT, TEXT, max_size=18), HOSTILE)
ATTRIBUTE_VALUES = st.one_of(
    TEXT,
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.integers(510, 514).map(lambda n: "v" * n),
    HOSTILE,
)
ATTRIBUTES = st.one_of(
    st.dictionaries(
        st.one_of(TEXT, st.integers(63, 66).map(lambda n: "k" * n)), ATTRIBUTE_VALUES, max_size=17
    ),
    HOSTILE,
)
FILE_IDS = st.one_of(st.lists(IDS, max_size=3), HOSTILE)


@st.composite
def fields_of(draw: st.DrawFn, strategies: dict[str, st.SearchStrategy[Any]]) -> Any:
    """A body holding some of ``strategies``' fields (each drawn from its own, or hostile),
    or, now and then, any JSON value at all."""
    if draw(st.integers(0, 9)) == 0:
        return draw(HOSTILE)
    body: dict[str, Any] = {}
    for name in draw(st.lists(st.sampled_from(sorted(strategies)), max_size=4, unique=True)):
        body[name] = draw(st.one_of(strategies[name], strategies[name], HOSTILE))
    return body


STORE_BODIES = fields_of(
    {
        "name": TEXT,
        "file_ids": FILE_IDS,
        "metadata": METADATA,
        "expires_after": st.one_of(st.none(), EXPIRES),
        "chunking_strategy": CHUNKING,
        "description": TEXT,
    }
)
ATTACH_BODIES = fields_of(
    {"file_id": IDS, "attributes": ATTRIBUTES, "chunking_strategy": CHUNKING}
).map(lambda body: {"file_id": SEEDED_FILE, **body} if isinstance(body, dict) else body)
BATCH_FILES = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {"file_id": IDS}, optional={"attributes": ATTRIBUTES, "chunking_strategy": CHUNKING}
        ),
        HOSTILE,
    ),
    max_size=3,
)
BATCH_BODIES = fields_of(
    {
        "file_ids": FILE_IDS,
        "files": st.one_of(BATCH_FILES, HOSTILE),
        "attributes": ATTRIBUTES,
        "chunking_strategy": CHUNKING,
    }
)

COMPARISON_TYPES = ["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "like", ""]
FILTER_VALUES = st.one_of(ATTRIBUTE_VALUES, st.lists(ATTRIBUTE_VALUES, max_size=3))
FILTERS = st.recursive(
    st.one_of(
        st.fixed_dictionaries(
            {"type": st.sampled_from(COMPARISON_TYPES)},
            optional={
                "key": st.one_of(st.sampled_from(["topic", "year"]), TEXT, HOSTILE),
                "value": FILTER_VALUES,
            },
        ),
        HOSTILE,
    ),
    lambda children: st.fixed_dictionaries(
        {"type": st.sampled_from(["and", "or", "not"])},
        optional={"filters": st.one_of(st.lists(children, max_size=3), HOSTILE)},
    ),
    max_leaves=6,
)
WEIGHTS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-2, 2**70),
    st.sampled_from([0, 1e308, 1.7976931348623157e308]),
    HOSTILE,
)
RANKING = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "score_threshold": st.one_of(st.floats(allow_nan=True), st.integers(-1, 2), HOSTILE),
            "ranker": st.one_of(st.sampled_from(["auto", "default-2024-11-15", "none"]), HOSTILE),
            "hybrid_search": st.one_of(
                st.fixed_dictionaries(
                    {}, optional={"embedding_weight": WEIGHTS, "text_weight": WEIGHTS}
                ),
                HOSTILE,
            ),
        },
    ),
    HOSTILE,
)
QUERY_TEXTS = st.one_of(
    st.sampled_from(["lighthouse ships", "the", "_ _", "x" * 3000, '"*" OR NEAR(a b)', "ab:c"]),
    TEXT,
)
SEARCH_BODIES = fields_of(
    {
        "query": st.one_of(QUERY_TEXTS, st.lists(QUERY_TEXTS, max_size=3)),
        "filters": FILTERS,
        "ranking_options": RANKING,
        "max_num_results": st.one_of(st.integers(-1, 52), HOSTILE),
        "rewrite_query": st.one_of(st.booleans(), HOSTILE),
    }
).map(lambda body: {"query": "lighthouse ships", **body} if isinstance(body, dict) else body)

TOKEN_IDS = st.lists(st.one_of(st.integers(-1, 300_000), st.integers(-(2**70), 2**70)), max_size=4)
EMBEDDING_INPUTS = st.one_of(
    TEXT,
    st.lists(TEXT, max_size=4),
    TOKEN_IDS,
    st.lists(TOKEN_IDS, max_size=3),
    st.lists(st.one_of(TEXT, TOKEN_IDS), max_size=3),  # mixed: never valid
    st.integers(2047, 2049).map(lambda n: ["a"] * n),
    HOSTILE,
)
EMBEDDING_BODIES = fields_of(
    {
        "model": st.one_of(st.sampled_from(["embed-small", "echo", "chat-model", "nope"]), TEXT),
        "input": EMBEDDING_INPUTS,
        "dimensions": st.one_of(st.integers(-1, 300), st.integers(2**31, 2**70), HOSTILE),
        "encoding_format": st.one_of(st.sampled_from(["float", "base64", "binary"]), HOSTILE),
        "user": TEXT,
    }
).map(
    lambda body: (
        {"model": "embed-small", "input": "hello", **body} if isinstance(body, dict) else body
    )
)

# -- WebSocket mode ------------------------------------------------------------------------

LANES = st.one_of(st.sampled_from(["a", "b", "c"]), TEXT, HOSTILE)
CREATE_FIELDS = {
    "model": st.one_of(st.sampled_from(["echo", "chat-model", "nope"]), HOSTILE),
    "input": st.one_of(TEXT, st.lists(st.one_of(MESSAGE, items()), max_size=2), HOSTILE),
    "stream_id": LANES,
    "previous_response_id": st.one_of(st.sampled_from(["resp_x", "<latest>"]), HOSTILE),
    "store": st.one_of(st.booleans(), HOSTILE),
    "generate": st.one_of(st.booleans(), HOSTILE),
    "stream": HOSTILE,
    "background": st.one_of(st.booleans(), HOSTILE),
    "client_metadata": HOSTILE,
    "instructions": HOSTILE,
    "tools": HOSTILE,
    "metadata": HOSTILE,
}


@st.composite
def create_frames(draw: st.DrawFn) -> dict[str, Any]:
    """A ``response.create`` frame: a valid turn's fields, some of them replaced."""
    frame: dict[str, Any] = {"type": "response.create", "model": "echo", "input": "hi"}
    for name in draw(st.lists(st.sampled_from(sorted(CREATE_FIELDS)), max_size=4, unique=True)):
        frame[name] = draw(CREATE_FIELDS[name])
    return frame


# A frame is text to send as it is (JSON or not), bytes (a binary frame) or an object.
FRAMES = st.one_of(
    create_frames(),
    create_frames(),
    st.fixed_dictionaries({"type": st.one_of(st.sampled_from(["response.cancel", ""]), HOSTILE)}),
    HOSTILE,
    st.sampled_from(["", "{", "[1,", '{"type": "response.create"', "null", '"\\ud800"', "1e999"]),
    st.text(max_size=20),
    st.binary(max_size=20),
)
