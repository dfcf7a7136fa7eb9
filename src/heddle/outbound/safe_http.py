"""An httpx client for calls to the caller's backend that can only reach allowed addresses.

The guard is an httpcore network backend: for every new connection it resolves the host name
once, checks every resolved address against the policy, and connects to a checked address.
TLS is then started for the *name*, so SNI and certificate verification are unchanged, and
there is no second resolution for a DNS-rebinding answer to slip into. Because the check sits
under the connection pool, it applies to every request and every redirect hop alike.

The transport also refuses plain http unless private targets are allowed, caps the response
body, and enforces a total deadline per request (connect + send + the whole body). Every
request is a client span (`POST`, observability/tracing.py, up to the response head) whose
context goes out as `traceparent`, so a tool host or webhook receiver joins the trace.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from typing import Any

import anyio
import httpcore
import httpx

from heddle.observability import tracing
from heddle.outbound.addresses import AddressPolicy, IPAddress, parse_ip, policy_for

Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]
MAX_URL_LENGTH = 2048
# Appended to refusals that only strict mode makes, so a developer knows the switch.
DEV_HINT = ("plain http and loopback/private addresses are allowed only in development: "
            "run `heddle serve --dev` or set HEDDLE_OUTBOUND_ALLOW_PRIVATE=true")
USER_AGENT = "heddle-outbound/1.0"


class DestinationRefused(httpx.ConnectError):
    """The destination is not allowed (address policy, plain http, unix socket).

    Raised before any connection is made, so nothing was sent.
    """


class ResponseRefused(httpx.RequestError):
    """The response cannot be accepted: too large, or encoded although identity was asked."""


class ResponseTooLarge(ResponseRefused):
    pass


class _AddressRefused(httpcore.ConnectError):
    pass


async def system_resolver(host: str, port: int) -> list[IPAddress]:
    """Every address the system resolver gives for ``host`` (IP literals pass through)."""
    literal = parse_ip(host)
    if literal is not None:
        return [literal]
    try:
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise httpcore.ConnectError(f"could not resolve {host!r}: {exc.strerror}") from None
    found: list[IPAddress] = []
    for *_, sockaddr in infos:
        address = parse_ip(str(sockaddr[0]))
        if address is not None and address not in found:
            found.append(address)
    if not found:
        raise httpcore.ConnectError(f"{host!r} resolved to no address")
    return found


class GuardedNetworkBackend(httpcore.AsyncNetworkBackend):
    """Resolve once, check every address, connect to a checked address."""

    def __init__(self, policy: AddressPolicy, resolver: Resolver = system_resolver,
                 inner: httpcore.AsyncNetworkBackend | None = None):
        self.policy = policy
        self.resolver = resolver
        self.inner = inner or httpcore.AnyIOBackend()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            with anyio.fail_after(timeout):
                addresses = await self.resolver(host, port)
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"resolving {host!r} timed out") from None
        refused = [address for address in addresses if not self.policy(address)]
        if refused:
            where = f"{host} resolves to {refused[0]}" if parse_ip(host) is None else host
            raise _AddressRefused(f"{where}: not an address outbound calls may reach")
        last_error: Exception | None = None
        for address in addresses:
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0.001)
            try:
                return await self.inner.connect_tcp(str(address), port, timeout=remaining,
                                                    local_address=local_address,
                                                    socket_options=socket_options)
            except httpcore.ConnectError as exc:
                last_error = exc
        raise last_error or httpcore.ConnectError(f"could not connect to {host!r}")

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[Any] | None = None
                                  ) -> httpcore.AsyncNetworkStream:
        raise _AddressRefused("outbound calls may not use unix sockets")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


_EXCEPTIONS: list[tuple[type[Exception], type[httpx.TransportError]]] = [
    # Most specific first.
    (httpcore.ConnectTimeout, httpx.ConnectTimeout), (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout), (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError), (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError), (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
]


@contextlib.contextmanager
def _mapped(request: httpx.Request, progress: _Progress) -> Iterator[None]:
    try:
        yield
    except TimeoutError:  # the total deadline (anyio.fail_after)
        kind = httpx.ReadTimeout if progress.sent else httpx.ConnectTimeout
        raise kind("total timeout exceeded", request=request) from None
    except _AddressRefused as exc:
        raise DestinationRefused(str(exc), request=request) from None
    except httpcore.PoolTimeout as exc:
        raise httpx.PoolTimeout(str(exc), request=request) from exc
    except Exception as exc:
        for source, target in _EXCEPTIONS:
            if isinstance(exc, source):
                raise target(str(exc) or type(exc).__name__, request=request) from exc
        raise


class _Progress:
    """Whether any byte of the request may have been written (from httpcore's trace)."""

    def __init__(self, user_trace: Callable[..., Awaitable[None]] | None):
        self.sent = False
        self._user_trace = user_trace

    async def trace(self, name: str, info: dict[str, Any]) -> None:
        if name.endswith("send_request_headers.started"):
            self.sent = True
        if self._user_trace is not None:
            await self._user_trace(name, info)


class _CappedStream(httpx.AsyncByteStream):
    def __init__(self, inner: Any, request: httpx.Request, progress: _Progress,
                 max_bytes: int, deadline: float):
        self._inner, self._request, self._progress = inner, request, progress
        self._max_bytes, self._deadline = max_bytes, deadline

    async def __aiter__(self) -> AsyncIterator[bytes]:
        received = 0
        chunks = self._inner.__aiter__()
        while True:
            with _mapped(self._request, self._progress):
                with anyio.fail_after(max(self._deadline - time.monotonic(), 0)):
                    try:
                        chunk = await chunks.__anext__()
                    except StopAsyncIteration:
                        return
            received += len(chunk)
            if received > self._max_bytes:
                raise ResponseTooLarge(f"response body exceeds {self._max_bytes} bytes",
                                       request=self._request)
            yield chunk

    async def aclose(self) -> None:
        if hasattr(self._inner, "aclose"):
            await self._inner.aclose()


class _RefusedStream(httpx.AsyncByteStream):
    def __init__(self, error: ResponseRefused):
        self._error = error

    async def __aiter__(self) -> AsyncIterator[bytes]:
        raise self._error
        yield b""  # pragma: no cover - makes this an async generator

    async def aclose(self) -> None:
        return None


class GuardedTransport(httpx.AsyncBaseTransport):
    """httpx transport over a connection pool that uses `GuardedNetworkBackend`.

    It never uses a proxy: a proxy would make the connection, and the address check with it.
    """

    def __init__(self, *, policy: AddressPolicy, require_https: bool, total_timeout: float,
                 max_response_bytes: int, resolver: Resolver = system_resolver,
                 ssl_context: ssl.SSLContext | None = None, max_connections: int = 100,
                 keepalive_expiry: float = 4.0):
        self.require_https = require_https
        self.total_timeout = total_timeout
        self.max_response_bytes = max_response_bytes
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context or httpx.create_ssl_context(),
            max_connections=max_connections, max_keepalive_connections=max_connections,
            keepalive_expiry=keepalive_expiry, http1=True, http2=False,
            network_backend=GuardedNetworkBackend(policy, resolver))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        # The URL without its query (it may carry a token) names the destination in the span.
        with tracing.span(request.method, {
            "http.request.method": request.method, "server.address": url.host, "server.port": url.port,
            "url.full": str(url.copy_with(query=None, fragment=None)),
        }, kind="client") as span:
            tracing.inject(request.headers)
            response = await self._send(request)
            span.set("http.response.status_code", response.status_code)
            if response.status_code >= 500:
                span.fail(str(response.status_code))
            return response

    async def _send(self, request: httpx.Request) -> httpx.Response:
        scheme = request.url.scheme
        if scheme not in ("http", "https"):
            raise DestinationRefused(f"scheme {scheme!r} is not allowed", request=request)
        if self.require_https and scheme != "https":
            raise DestinationRefused(f"outbound calls must use https ({DEV_HINT})", request=request)
        deadline = time.monotonic() + self.total_timeout
        progress = _Progress(request.extensions.get("trace"))
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=request.url.raw_scheme, host=request.url.raw_host,
                             port=request.url.port, target=request.url.raw_path),
            headers=request.headers.raw, content=request.stream,
            extensions={**request.extensions, "trace": progress.trace})
        try:
            with _mapped(request, progress), anyio.fail_after(self.total_timeout):
                response = await self._pool.handle_async_request(core_request)
        except DestinationRefused as exc:
            if not self.require_https:  # already permissive: the hint would not help
                raise
            raise DestinationRefused(f"{exc} ({DEV_HINT})", request=request) from None
        refusal = self._refusal(request, response)
        if refusal is not None:
            await response.aclose()
            stream: httpx.AsyncByteStream = _RefusedStream(refusal)
        else:
            stream = _CappedStream(response.stream, request, progress, self.max_response_bytes,
                                   deadline)
        return httpx.Response(status_code=response.status, headers=response.headers,
                              stream=stream, extensions=response.extensions)

    def _refusal(self, request: httpx.Request,
                 response: httpcore.Response) -> ResponseRefused | None:
        """Refuse a body before reading it; the status line and headers stay readable."""
        headers = httpx.Headers(response.headers)
        encoding = headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            return ResponseRefused(f"response is {encoding[:40]}-encoded; identity was asked",
                                   request=request)
        length = headers.get("content-length", "").strip()
        if length.isdigit() and int(length) > self.max_response_bytes:
            return ResponseTooLarge(f"response body of {length[:20]} bytes exceeds "
                                    f"{self.max_response_bytes}", request=request)
        return None

    async def aclose(self) -> None:
        await self._pool.aclose()


def build_outbound_client(*, allow_private: bool, connect_timeout: float, timeout: float,
                          max_response_bytes: int, address_policy: AddressPolicy | None = None,
                          resolver: Resolver = system_resolver,
                          ssl_context: ssl.SSLContext | None = None,
                          max_connections: int = 100) -> httpx.AsyncClient:
    """The client for tool and mint calls. Redirects are not followed; when a caller asks
    for them per request, every hop is still checked. ``timeout`` is the total per request.

    ``address_policy`` overrides the policy chosen by ``allow_private`` (tests use it to
    allow exactly one loopback address).
    """
    if connect_timeout <= 0 or timeout <= 0 or max_response_bytes <= 0:
        raise ValueError("timeouts and max_response_bytes must be positive")
    transport = GuardedTransport(
        policy=address_policy or policy_for(allow_private), require_https=not allow_private,
        total_timeout=timeout, max_response_bytes=max_response_bytes, resolver=resolver,
        ssl_context=ssl_context, max_connections=max_connections)
    return httpx.AsyncClient(
        transport=transport, follow_redirects=False, trust_env=False,
        timeout=httpx.Timeout(timeout, connect=min(connect_timeout, timeout)),
        headers={"User-Agent": USER_AGENT, "Accept-Encoding": "identity"})


def validate_outbound_url(url: str, allow_private: bool) -> str:
    """Check a tool-host base URL or mint URL at configuration time; returns it normalised.

    https is required unless ``allow_private``; no credentials, no fragment; an IP literal or
    a ``localhost`` name must be allowed by the address policy.
    """
    if not isinstance(url, str) or not url.strip():
        raise ValueError("URL is empty")
    url = url.strip()
    if len(url) > MAX_URL_LENGTH:
        raise ValueError(f"URL is longer than {MAX_URL_LENGTH} characters")
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url):
        raise ValueError("URL contains whitespace or control characters")
    if "#" in url:
        raise ValueError("URL must not have a fragment (#...)")
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ValueError(f"URL is malformed: {exc}") from None
    if parsed.scheme not in ("http", "https"):
        raise ValueError("URL must start with https:// (or http:// for local development)")
    if parsed.scheme != "https" and not allow_private:
        raise ValueError(f"URL must use https ({DEV_HINT})")
    if not parsed.host:
        raise ValueError("URL has no host")
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise ValueError("URL port must be from 1 to 65535")
    if parsed.userinfo:
        raise ValueError("URL must not contain a user name or password")
    host = parsed.host.rstrip(".").lower()
    literal = parse_ip(host)
    is_localhost = host == "localhost" or host.endswith(".localhost")
    if literal is not None and not policy_for(allow_private)(literal):
        hint = "" if allow_private else f" ({DEV_HINT})"
        raise ValueError(f"URL host {literal} is not a public address{hint}")
    if is_localhost and not allow_private:
        raise ValueError(f"URL host is localhost, which is not a public address ({DEV_HINT})")
    return str(parsed)
