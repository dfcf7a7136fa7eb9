"""The SSRF guard, the response cap and the total deadline, against real sockets.

The production policy (public addresses only) refuses every loopback target before any
connection is made: `ConnectionCounter` proves no TCP connection reached 127.0.0.1. To test
what an *allowed* destination looks like with loopback servers, the policy is injected to
allow exactly 127.0.0.2 while still refusing 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import gzip
import ipaddress
import ssl

import httpx
import pytest
from outbound_testkit import ConnectionCounter, ServerThread, only_127_0_0_2, self_signed_cert
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from heddle.outbound import (
    DestinationRefused,
    ResponseRefused,
    ResponseTooLarge,
    build_outbound_client,
    validate_outbound_url,
)
from heddle.outbound.addresses import is_allowed_private_address, is_public_address
from heddle.outbound.safe_http import GuardedNetworkBackend


async def hello(request: Request) -> Response:
    return JSONResponse({"host": request.headers.get("host")})


async def redirect(request: Request) -> Response:
    return RedirectResponse(request.query_params["to"], status_code=307)


async def big(request: Request) -> Response:
    return Response(b"x" * int(request.query_params["n"]), media_type="text/plain")


async def stream(request: Request) -> Response:
    n, delay = int(request.query_params["n"]), float(request.query_params.get("delay", 0))

    async def body():
        for _ in range(n // 100):
            if delay:
                await asyncio.sleep(delay)
            yield b"y" * 100
    return StreamingResponse(body(), media_type="text/plain")


async def gzipped(request: Request) -> Response:
    return Response(gzip.compress(b"z" * 10_000), headers={"Content-Encoding": "gzip"})


APP = Starlette(routes=[Route("/hello", hello), Route("/redirect", redirect),
                        Route("/big", big), Route("/stream", stream), Route("/gzip", gzipped)])


@pytest.fixture(scope="module")
def target():
    with ServerThread(APP, host="127.0.0.2") as server:
        yield server


@pytest.fixture
def private_listener():
    with ConnectionCounter("127.0.0.1") as counter:
        yield counter


# --- the address policy --------------------------------------------------------------------

@pytest.mark.parametrize(("address", "public"), [
    ("8.8.8.8", True), ("1.1.1.1", True), ("2606:4700::1111", True), ("2a00:1450::1", True),
    ("64:ff9b::808:808", True),  # NAT64 of 8.8.8.8
    ("2002:808:808::1", True),   # 6to4 of 8.8.8.8
    ("127.0.0.1", False), ("127.255.0.9", False), ("10.1.2.3", False), ("172.16.0.1", False),
    ("172.31.255.255", False), ("192.168.1.1", False), ("169.254.169.254", False),
    ("100.64.0.1", False), ("100.100.100.200", False), ("0.0.0.0", False), ("0.1.2.3", False),
    ("224.0.0.1", False), ("239.1.1.1", False), ("255.255.255.255", False), ("240.0.0.1", False),
    ("192.0.0.8", False), ("192.0.2.1", False), ("198.18.0.1", False), ("203.0.113.9", False),
    ("::1", False), ("::", False), ("::ffff:127.0.0.1", False), ("::ffff:10.0.0.1", False),
    ("::127.0.0.1", False), ("fc00::1", False), ("fd00:ec2::254", False), ("fe80::1", False),
    ("fec0::1", False), ("ff02::1", False), ("2001:db8::1", False), ("2001::1", False),
    ("64:ff9b::7f00:1", False), ("64:ff9b:1::1", False), ("2002:7f00:1::", False),
    ("2002:a00:1::", False), ("100::1", False),
])
def test_public_address_policy(address, public):
    assert is_public_address(ipaddress.ip_address(address)) is public


@pytest.mark.parametrize(("address", "allowed"), [
    ("127.0.0.1", True), ("10.0.0.5", True), ("192.168.0.2", True), ("::1", True),
    ("fd12::1", True), ("8.8.8.8", True),
    ("169.254.169.254", False), ("fe80::1", False), ("0.0.0.0", False), ("::", False),
    ("224.0.0.1", False), ("255.255.255.255", False), ("::ffff:169.254.169.254", False),
])
def test_development_policy_still_refuses_metadata_and_non_unicast(address, allowed):
    assert is_allowed_private_address(ipaddress.ip_address(address)) is allowed


# --- refusals with the production policy ---------------------------------------------------

@pytest.mark.parametrize("url", [
    "https://127.0.0.1:{port}/", "https://localhost:{port}/", "https://[::1]:{port}/",
    "https://[::ffff:127.0.0.1]:{port}/", "https://2130706433:{port}/", "https://0x7f.1:{port}/",
    "https://127.1:{port}/",
    "https://10.1.2.3/", "https://192.168.1.1/", "https://172.16.5.4/",
    "https://169.254.169.254/latest/meta-data/", "https://100.64.0.1/", "https://[fd00:ec2::254]/",
    "https://0.0.0.0:{port}/",
])
async def test_private_destinations_are_refused_before_connecting(public_client, private_listener,
                                                                   url):
    with pytest.raises(DestinationRefused):
        await public_client.get(url.format(port=private_listener.port))
    assert private_listener.accepted == 0


async def test_a_name_resolving_to_loopback_is_refused(private_listener):
    async def resolver(host, port):
        return [ipaddress.ip_address("127.0.0.1")]

    async with build_outbound_client(allow_private=False, connect_timeout=1, timeout=2,
                                     max_response_bytes=1024, resolver=resolver) as client:
        with pytest.raises(DestinationRefused, match="tools.example.test"):
            await client.get(f"https://tools.example.test:{private_listener.port}/")
    assert private_listener.accepted == 0


async def test_plain_http_is_refused_without_allow_private(public_client):
    with pytest.raises(DestinationRefused, match="https"):
        await public_client.get("http://example.com/")


async def test_env_proxies_are_never_used(monkeypatch, target):
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:9")
    async with build_outbound_client(allow_private=True, connect_timeout=1, timeout=2,
                                     max_response_bytes=1024, address_policy=only_127_0_0_2) as c:
        assert (await c.get(f"{target.url}/hello")).status_code == 200


async def test_unix_sockets_are_refused():
    backend = GuardedNetworkBackend(is_public_address)
    with pytest.raises(Exception, match="unix sockets"):
        await backend.connect_unix_socket("/tmp/x.sock")


# --- allowed destinations, redirects and DNS -----------------------------------------------

async def test_an_allowed_destination_is_reached_and_127_0_0_1_is_not(client, target,
                                                                      private_listener):
    response = await client.get(f"{target.url}/hello")
    assert response.status_code == 200
    with pytest.raises(DestinationRefused):
        await client.get(f"http://127.0.0.1:{private_listener.port}/")
    assert private_listener.accepted == 0


async def test_redirects_are_not_followed_and_each_hop_is_checked(client, target,
                                                                  private_listener):
    to_private = f"{target.url}/redirect?to=http://127.0.0.1:{private_listener.port}/secret"
    not_followed = await client.get(to_private)
    assert not_followed.status_code == 307
    with pytest.raises(DestinationRefused):
        await client.get(to_private, follow_redirects=True)
    assert private_listener.accepted == 0
    to_allowed = f"{target.url}/redirect?to={target.url}/hello"
    assert (await client.get(to_allowed, follow_redirects=True)).status_code == 200


async def test_one_resolution_per_connection_and_the_host_header_is_kept(target):
    answers = [[ipaddress.ip_address("127.0.0.2")], [ipaddress.ip_address("127.0.0.1")]]
    calls = []

    async def rebinding(host, port):
        calls.append(host)
        return answers[min(len(calls) - 1, 1)]

    async with build_outbound_client(allow_private=True, connect_timeout=1, timeout=2,
                                     max_response_bytes=1024, address_policy=only_127_0_0_2,
                                     resolver=rebinding) as client:
        url = f"http://rebind.test:{target.port}/hello"
        first = await client.get(url)
        assert first.json() == {"host": f"rebind.test:{target.port}"}
        assert (await client.get(url)).status_code == 200  # same (checked) connection
        assert calls == ["rebind.test"]
    async with build_outbound_client(allow_private=True, connect_timeout=1, timeout=2,
                                     max_response_bytes=1024, address_policy=only_127_0_0_2,
                                     resolver=rebinding) as client:
        with pytest.raises(DestinationRefused):  # the rebound answer is checked too
            await client.get(url)


async def test_a_name_with_any_refused_address_is_refused(target):
    async def mixed(host, port):
        return [ipaddress.ip_address("127.0.0.2"), ipaddress.ip_address("127.0.0.1")]

    async with build_outbound_client(allow_private=True, connect_timeout=1, timeout=2,
                                     max_response_bytes=1024, address_policy=only_127_0_0_2,
                                     resolver=mixed) as client:
        with pytest.raises(DestinationRefused, match="127.0.0.1"):
            await client.get(f"http://mixed.test:{target.port}/hello")


async def test_slow_resolution_is_a_connect_timeout():
    async def slow(host, port):
        await asyncio.sleep(5)
        return []

    async with build_outbound_client(allow_private=False, connect_timeout=0.2, timeout=2,
                                     max_response_bytes=1024, resolver=slow) as client:
        with pytest.raises(httpx.ConnectTimeout):
            await client.get("https://slow.test/")


async def test_tls_is_verified_for_the_name_while_connecting_to_the_checked_address(tmp_path):
    certfile, keyfile, pem = self_signed_cert(tmp_path, "tools.test")
    context = ssl.create_default_context(cadata=pem.decode())

    async def resolver(host, port):
        return [ipaddress.ip_address("127.0.0.2")]

    with ServerThread(APP, host="127.0.0.2", ssl_certfile=certfile, ssl_keyfile=keyfile) as tls:
        async with build_outbound_client(allow_private=False, connect_timeout=2, timeout=3,
                                         max_response_bytes=1024, address_policy=only_127_0_0_2,
                                         resolver=resolver, ssl_context=context) as client:
            ok = await client.get(f"https://tools.test:{tls.port}/hello")
            assert ok.json() == {"host": f"tools.test:{tls.port}"}
            with pytest.raises(httpx.ConnectError, match="(?i)certificate|hostname"):
                await client.get(f"https://other.test:{tls.port}/hello")


# --- the response cap, encodings and the total deadline ------------------------------------

async def test_response_cap(target):
    async with build_outbound_client(allow_private=True, connect_timeout=1, timeout=3,
                                     max_response_bytes=1000, address_policy=only_127_0_0_2) as c:
        assert len((await c.get(f"{target.url}/big?n=1000")).content) == 1000
        with pytest.raises(ResponseTooLarge):
            await c.get(f"{target.url}/big?n=1001")  # refused from Content-Length
        with pytest.raises(ResponseTooLarge):
            await c.get(f"{target.url}/stream?n=5000")  # chunked: stops reading past the cap
        async with c.stream("GET", f"{target.url}/big?n=5000") as response:
            assert response.status_code == 200  # the status is known before the body is refused
            with pytest.raises(ResponseTooLarge):
                await response.aread()


async def test_compressed_responses_are_refused(client, target):
    with pytest.raises(ResponseRefused, match="gzip"):
        await client.get(f"{target.url}/gzip")


async def test_the_total_deadline_covers_a_slowly_dripping_body(target):
    async with build_outbound_client(allow_private=True, connect_timeout=1, timeout=0.6,
                                     max_response_bytes=10_000, address_policy=only_127_0_0_2) as c:
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(httpx.ReadTimeout, match="total"):
            await c.get(f"{target.url}/stream?n=3000&delay=0.1")  # 30 chunks, 3 s
        assert loop.time() - started < 1.5


# --- configuration-time URL validation -----------------------------------------------------

@pytest.mark.parametrize(("url", "allow_private"), [
    ("https://tools.example.com", False), ("https://tools.example.com:8443/base/", False),
    ("https://bücher.example/x", False), ("http://127.0.0.1:9000", True),
    ("http://localhost:9000/tools", True), ("https://[2606:4700::1111]/", False),
])
def test_valid_urls(url, allow_private):
    assert validate_outbound_url(url, allow_private).startswith(("http://", "https://"))


@pytest.mark.parametrize(("url", "allow_private", "message"), [
    ("http://tools.example.com", False, "https"),
    ("ftp://tools.example.com", True, "https://"),
    ("https://user:pw@tools.example.com", False, "user name"),
    ("https://tools.example.com/#frag", False, "fragment"),
    ("https://127.0.0.1/", False, "public"), ("https://[::1]/", False, "public"),
    ("https://10.0.0.1/", False, "public"), ("https://169.254.169.254/", True, "public"),
    ("https://localhost/", False, "localhost"), ("https://api.localhost/", False, "localhost"),
    ("", False, "empty"), ("   ", False, "empty"), ("https://tools.example.com/a b", False,
                                                     "whitespace"),
    ("https://x.com/\x00", False, "control"), ("https://" + "a" * 3000 + ".com", False, "longer"),
    ("https://", False, "host"), ("notaurl", False, "https://"), ("https://x:99999/", False, "port"),
    ("https://x:0/", False, "port"), ("https://[::1/", False, "malformed"),
])
def test_invalid_urls(url, allow_private, message):
    with pytest.raises(ValueError, match=message):
        validate_outbound_url(url, allow_private)


def test_invalid_url_type():
    with pytest.raises(ValueError):
        validate_outbound_url(None, False)  # type: ignore[arg-type]


def test_client_arguments_are_checked():
    with pytest.raises(ValueError):
        build_outbound_client(allow_private=False, connect_timeout=0, timeout=1,
                              max_response_bytes=1)
