"""The errors of the file store."""

from __future__ import annotations

from ..errors import SessionError


class FileObjectNotFound(SessionError):
    """No file, vector store, attached file or batch has this id in the project."""

    code = "not_found"

    def __init__(self, kind: str, object_id: str, param: str = "id") -> None:
        super().__init__(f"No {kind} found with id '{object_id}'.")
        self.kind = kind
        self.object_id = object_id
        self.param = param
