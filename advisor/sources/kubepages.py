"""Paged lists from the Kubernetes API, each page's JSON read within a byte cap
(`advisor.sources.answers.read_capped`): a page past it is asked again at half the size
(same continue token), down to one object, so memory stays bounded however large the
cluster or its objects."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import aiohttp

from advisor.defaults import MIB, size_text
from advisor.errors import SourceError
from advisor.sources.answers import AnswerLimit, TooDeep, parse_json, read_capped
from advisor.sources.http import describe

PAGE_SIZE = 500
# One page's JSON at most; etcd keeps an object under 1.5 MiB, so one object always fits.
MAX_PAGE_BYTES = 64 * MIB


async def optional_list(
    call: Any, host: str, what: str, paging: Paging, warnings: list[str], without: str
) -> list[Any]:
    """Every item of a list the run can do without: a failure is a warning (saying what
    goes `without` it) and no items."""
    try:
        return await list_all(call, host, what, paging)
    except SourceError as error:
        warnings.append(f"{error}; {without}")
        return []


class NotServed(SourceError):
    """The API serves no such resource (HTTP 404 on the list): a custom resource whose CRD
    is not installed."""


@dataclass(frozen=True, slots=True)
class Paging:
    timeout_s: float
    page_size: int
    max_page_bytes: int


async def list_all(call: Any, host: str, what: str, paging: Paging, **selectors: str) -> list[Any]:
    """Every item of a paged list. A page past `max_page_bytes` is asked again at half the
    size (the same continue token); one object past it is a SourceError."""
    items: list[Any] = []
    token: str | None = None
    size = paging.page_size
    source = f"Kubernetes API {host}: list {what}"
    while True:
        options: dict[str, Any] = {"limit": size, **selectors}
        if token:
            options["_continue"] = token
        try:
            response = await call(
                **options, _preload_content=False, _request_timeout=paging.timeout_s
            )
            async with response:
                status = response.status
                raw = await read_capped(response, AnswerLimit(paging.max_page_bytes, ""), source)
        except SourceError:
            if size == 1:
                limit = size_text(paging.max_page_bytes)
                raise SourceError(f"{source}: one object is larger than {limit}") from None
            size = max(1, size // 2)
            continue
        except (aiohttp.ClientError, TimeoutError) as error:
            raise SourceError(
                f"Kubernetes API {host}: cannot reach it: {describe(error)}"
            ) from None
        body = _json(raw)
        if not 200 <= status < 300 or not isinstance(body.get("items"), list):
            reason = " ".join(str(body.get(k) or "") for k in ("reason", "message")).strip()
            detail = reason or " ".join(raw[:200].decode(errors="replace").split())
            failure = NotServed if status == 404 else SourceError
            raise failure(f"{source}: HTTP {status} {detail}")
        items.extend(body["items"])
        metadata = body.get("metadata")
        token = metadata.get("continue") if isinstance(metadata, dict) else None
        if not token:
            return items


def _json(raw: bytes) -> dict[str, Any]:
    try:
        body = parse_json(raw)
    except TooDeep:  # said as the API's own message would be: the caller's one line tells why
        return {"message": "answer is JSON nested too deep"}
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
