"""``POST /v1/embeddings``: a client's texts embedded by a routed model, metered."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...api.files.embeddings import EmbeddingsBody
from ...api.request_body import validate_body
from ...turn.embeddings import current_key_id
from ...turn.file_services import FileServices
from ..json_response import JSONResponse
from .common import project, read_body


def files(request: Request) -> FileServices:
    """The gateway's files, vector stores and embeddings."""
    found: FileServices = request.app.state.files
    return found


async def create_embeddings(request: Request) -> Response:
    body = validate_body(EmbeddingsBody, await read_body(request))
    embedded = await files(request).embeddings.embed(
        project(request),
        body.model,
        body.input,
        dimensions=body.dimensions,
        key_id=current_key_id(),
    )
    return JSONResponse(embedded.answer(body.model, body.encoding_format))


routes = [Route("/v1/embeddings", create_embeddings, methods=["POST"])]
