"""``/v1/files``: upload (a multipart form), list, retrieve, delete, and the bytes back."""

from __future__ import annotations

import time
from typing import Literal, cast

from starlette.datastructures import FormData, UploadFile
from starlette.formparsers import MultiPartException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from session import new_id
from session.files import StoredFile

from ...api.files.objects import file_object, listed
from ...errors import APIError, invalid_request
from ..json_response import JSONResponse
from .common import project, query_choice, query_int
from .embeddings import files

PURPOSES = (
    "assistants",
    "batch",
    "fine-tune",
    "vision",
    "user_data",
)
READ_BYTES = 1024 * 1024
FORM_OVERHEAD = 64 * 1024  # the form's boundaries and other fields


def _too_large(limit: int) -> APIError:
    return APIError(
        413,
        f"The file is larger than the limit of {limit} bytes.",
        param="file",
        code="file_too_large",
    )


def _checked(form: FormData) -> tuple[UploadFile, str]:
    upload, purpose = form.get("file"), form.get("purpose")
    if not isinstance(upload, UploadFile):
        raise invalid_request(
            "Missing required parameter: 'file'.", param="file", code="missing_required_parameter"
        )
    if "\x00" in (upload.filename or ""):  # as in a JSON body: no backend differs on it
        raise invalid_request(
            "Invalid value for 'file': its filename contains a NUL character.",
            param="file",
            code="invalid_value",
        )
    if not isinstance(purpose, str):
        raise invalid_request(
            "Missing required parameter: 'purpose'.",
            param="purpose",
            code="missing_required_parameter",
        )
    if purpose not in PURPOSES:
        raise invalid_request(
            f"Invalid value for 'purpose': {purpose!r}. "
            f"Supported values are: {', '.join(PURPOSES)}.",
            param="purpose",
            code="invalid_value",
        )
    return upload, purpose


async def _content(upload: UploadFile, limit: int) -> bytes:
    content = bytearray()
    while piece := await upload.read(READ_BYTES):
        content += piece
        if len(content) > limit:
            raise _too_large(limit)
    return bytes(content)


async def create_file(request: Request) -> Response:
    """Keep an uploaded file: the form's ``file`` and ``purpose``, within the size limit;
    the file and its bytes are written in one transaction."""
    services = files(request)
    limit = services.config.file_search.max_file_bytes
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit + FORM_OVERHEAD:
        raise _too_large(limit)
    try:
        async with request.form(max_files=1, max_fields=10) as form:
            upload, purpose = _checked(form)
            content = await _content(upload, limit)
    except MultiPartException as error:
        message = f"The form could not be read: {error.message}"
        raise invalid_request(message, param="file") from None
    name = (upload.filename or "").replace("\\", "/").rsplit("/", 1)[-1] or "upload"
    file_id = new_id("file").replace("_", "-", 1)
    record = StoredFile(file_id, project(request), name, purpose, len(content), time.time())
    await services.files().create_file(record, content)
    return JSONResponse(file_object(record))


async def list_files(request: Request) -> Response:
    purpose = request.query_params.get("purpose")
    order = query_choice(request, "order", "desc", ("asc", "desc"))
    found, more = (
        await files(request)
        .files()
        .list_files(
            project(request),
            purpose,
            request.query_params.get("after"),
            query_int(request, "limit", 10000, 1, 10000),
            cast(Literal["asc", "desc"], order),
        )
    )
    return JSONResponse(listed([file_object(f) for f in found], more))


async def retrieve_file(request: Request) -> Response:
    found = await files(request).files().get_file(project(request), request.path_params["id"])
    return JSONResponse(file_object(found))


async def delete_file(request: Request) -> Response:
    file_id = request.path_params["id"]
    await files(request).files().delete_file(project(request), file_id)
    return JSONResponse({"id": file_id, "object": "file", "deleted": True})


async def file_content(request: Request) -> Response:
    store = files(request).files()
    found = await store.get_file(project(request), request.path_params["id"])
    content = await store.file_content(project(request), found.id)
    return Response(content, media_type="application/octet-stream")


routes = [
    Route("/v1/files", create_file, methods=["POST"]),
    Route("/v1/files", list_files, methods=["GET"]),
    Route("/v1/files/{id}", retrieve_file, methods=["GET"]),
    Route("/v1/files/{id}", delete_file, methods=["DELETE"]),
    Route("/v1/files/{id}/content", file_content, methods=["GET"]),
]
