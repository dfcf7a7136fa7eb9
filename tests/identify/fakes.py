"""Real HTTP servers on loopback ports for the Identify tests: uvicorn in a thread, serving
Starlette apps that speak the Paystack and MTN MoMo APIs."""

from __future__ import annotations

import asyncio
import base64
import socket
import threading
from typing import Self

import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from support.net import wait_started


class LoopbackServer:
    """Serve an ASGI app with uvicorn on 127.0.0.1 in a background thread."""

    def __init__(self, app):
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, log_level="warning", lifespan="off",
                                timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run,
                                        kwargs={"sockets": [self._socket]}, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        wait_started(self._server, self._thread, timeout=10)
        return self

    def __exit__(self, *exc) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()


# --- a fake Paystack: GET /bank/resolve -------------------------------------------------------

class FakePaystack:
    SECRET = "sk_test_identify"

    def __init__(self):
        self.accounts = {("058", "0123456785"): "JANE ADA DOE",
                         ("040100", "1021130012345"): "KWAME  MENSAH",
                         ("120003", "8031234567"): "CHIDI OKAFOR"}
        self.mode = "normal"
        self.calls: list[dict] = []

    def app(self):
        return Starlette(routes=[Route("/bank/resolve", self._resolve)])

    async def _resolve(self, request):
        params = dict(request.query_params)
        self.calls.append({**params, "authorization": request.headers.get("authorization")})
        if self.mode == "server_error":
            return JSONResponse({"status": False, "message": "Internal server error"}, 500)
        if self.mode == "slow":
            await asyncio.sleep(3)
        if self.mode == "malformed":
            return Response('{"status": true, "data": {', media_type="application/json")
        if self.mode == "huge":
            return Response(b'{"status": true, "pad": "' + b"x" * 200_000 + b'"}',
                            media_type="application/json")
        if self.mode == "redirect":
            return RedirectResponse("http://127.0.0.1:9/elsewhere", 302)
        if request.headers.get("authorization") != f"Bearer {self.SECRET}":
            return JSONResponse({"status": False, "message": "Invalid key"}, 401)
        key = (params.get("bank_code"), params.get("account_number"))
        name = self.accounts.get(key)
        if name is None:
            return JSONResponse({"status": False, "message": "Could not resolve account name. "
                                 "Check parameters or try again."}, 422)
        if self.mode == "control_chars":
            name = "JANE\u0000DOE"
        if self.mode == "wrong_account":
            key = (key[0], "9999999999")
        return JSONResponse({"status": True, "message": "Account number resolved",
                             "data": {"account_number": key[1], "account_name": name, "bank_id": 9}})


# --- a fake MTN MoMo Open API (collection product) ---------------------------------------------

class FakeMtnMomo:
    SUBSCRIPTION_KEY = "sub-key-123"
    API_USER = "9f1c1a8e-2c2b-4d8e-9a53-0c2f6a1b7d10"
    API_KEY = "api-key-456"
    TARGET = "mtnghana"

    def __init__(self):
        self.wallets = {"233241234567": {"sub": "0", "name": "Ama Serwaa Mensah",
                                         "given_name": "Ama", "family_name": "Mensah",
                                         "birthdate": "1990-01-01", "locale": "en_GH"},
                        "233541234567": {"given_name": "Kofi", "family_name": "Boateng"}}
        self.mode = "normal"
        self.expires_in = 3600
        self.issued: list[str] = []
        self.revoked: set[str] = set()
        self.lookups = 0

    def app(self):
        return Starlette(routes=[
            Route("/collection/token/", self._token, methods=["POST"]),
            Route("/collection/v1_0/accountholder/msisdn/{msisdn}/basicuserinfo", self._info),
        ])

    async def _token(self, request):
        expected = base64.b64encode(f"{self.API_USER}:{self.API_KEY}".encode()).decode()
        if request.headers.get("ocp-apim-subscription-key") != self.SUBSCRIPTION_KEY:
            return JSONResponse({"statusCode": 401, "message": "Access denied due to invalid "
                                 "subscription key."}, 401)
        if request.headers.get("authorization") != f"Basic {expected}":
            return JSONResponse({"error": "login_failed"}, 401)
        if self.mode == "token_error":
            return JSONResponse({"error": "internal"}, 500)
        token = f"token-{len(self.issued) + 1}"
        self.issued.append(token)
        return JSONResponse({"access_token": token, "token_type": "access_token",
                             "expires_in": self.expires_in})

    async def _info(self, request):
        self.lookups += 1
        if self.mode == "server_error":
            return JSONResponse({"code": "INTERNAL_PROCESSING_ERROR"}, 500)
        if self.mode == "slow":
            await asyncio.sleep(3)
        if self.mode == "malformed":
            return Response("<html>gateway</html>", media_type="application/json")
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        if (request.headers.get("ocp-apim-subscription-key") != self.SUBSCRIPTION_KEY
                or token not in self.issued or token in self.revoked):
            return JSONResponse({"code": "UNAUTHORIZED", "message": "Unauthorized"}, 401)
        if request.headers.get("x-target-environment") != self.TARGET:
            return JSONResponse({"code": "NOT_ALLOWED_TARGET_ENVIRONMENT"}, 403)
        info = self.wallets.get(request.path_params["msisdn"])
        if info is None:
            return JSONResponse({"code": "RESOURCE_NOT_FOUND",
                                 "message": "Requested resource was not found."}, 404)
        return JSONResponse(info)
