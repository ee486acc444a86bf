"""The API double on its own event-loop thread, for synchronous code and subprocess tests."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from tests.kubeapi.server import KubeApiDouble

T = TypeVar("T")


class KubeApiThread:
    """`with KubeApiThread() as kube: kube.call(kube.api.add_pod, pod)`.

    Every touch of `api` goes through `call` (sync methods) or `run` (coroutines), so the
    double's state is only ever changed on its own loop.
    """

    def __init__(self, **options: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self.api = KubeApiDouble(**options)

    def __enter__(self) -> KubeApiThread:
        self._thread.start()
        self.run(self.api.start())
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.run(self.api.close())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop.close()

    @property
    def url(self) -> str:
        return self.api.url

    def run(self, coroutine: Coroutine[Any, Any, T], timeout_s: float = 30.0) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout_s)

    def call(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        async def invoke() -> T:
            return function(*args, **kwargs)

        return self.run(invoke())
