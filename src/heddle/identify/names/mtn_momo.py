"""MTN MoMo Open API, Collection product: account-holder basic user info.

Token: POST {base}/collection/token/ with HTTP Basic (api_user:api_key) and
`Ocp-Apim-Subscription-Key` -> {"access_token", "token_type", "expires_in"}.
Lookup: GET {base}/collection/v1_0/accountholder/msisdn/{msisdn}/basicuserinfo with
`Authorization: Bearer`, `X-Target-Environment` and `Ocp-Apim-Subscription-Key` ->
{"given_name", "family_name", "name", ...}. The msisdn is the number in international form
without '+'.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import httpx

from heddle.identify.checkdigits import is_digits
from heddle.identify.names.base import (
    UNAVAILABLE,
    NameResolution,
    UpstreamError,
    clean_name,
    normalise_base_url,
    request_json,
)
from heddle.identify.schemas import Institution, Rail
from heddle.observability.logging import get_logger

log = get_logger(__name__)

# Production target environments and the country each serves; "sandbox" serves any.
TARGET_ENVIRONMENTS = {
    "mtnghana": "GH", "mtnuganda": "UG", "mtnivorycoast": "CI", "mtncameroon": "CM",
    "mtnbenin": "BJ", "mtncongo": "CG", "mtnzambia": "ZM", "mtnswaziland": "SZ",
    "mtnguineaconakry": "GN", "mtnliberia": "LR", "mtnsouthafrica": "ZA",
}


class MtnMomoResolver:
    name = "mtn_momo"

    def __init__(self, client: httpx.AsyncClient, *, base_url: str, subscription_key: str,
                 api_user: str, api_key: str, target_environment: str = "sandbox",
                 timeout: float = 5.0, clock: Callable[[], float] = time.monotonic):
        if not (subscription_key and api_user and api_key):
            raise ValueError("MTN MoMo needs a subscription key, an API user and an API key")
        self._client = client
        self._base_url = normalise_base_url(base_url)
        self._subscription_key = subscription_key
        self._auth = (api_user, api_key)
        self._target = target_environment
        self._country = TARGET_ENVIRONMENTS.get(target_environment)
        if target_environment != "sandbox" and self._country is None:
            log.warning("identify.names.mtn_momo.unknown_target", target=target_environment)
        self._timeout = timeout
        self._clock = clock
        self._token: tuple[str, float] | None = None  # (access token, expires at)
        self._token_lock = asyncio.Lock()

    def supports(self, rail: Rail, institution: Institution) -> bool:
        served = institution.external_code(self.name)  # the wallet's country, when MTN runs it
        if rail is not Rail.MOMO or served is None:
            return False
        return self._target == "sandbox" or served == self._country

    async def resolve(self, rail: Rail, institution: Institution,
                      account_number: str) -> NameResolution:
        msisdn = account_number.removeprefix("+")
        if not is_digits(msisdn):
            return UNAVAILABLE
        try:
            for attempt in (1, 2):
                token = await self._access_token(force_new=attempt == 2)
                status, body = await request_json(
                    self._client, "GET",
                    f"{self._base_url}/collection/v1_0/accountholder/msisdn/{msisdn}/basicuserinfo",
                    timeout=self._timeout,
                    headers={"Authorization": f"Bearer {token}",
                             "X-Target-Environment": self._target,
                             "Ocp-Apim-Subscription-Key": self._subscription_key},
                )
                if status != 401:  # a revoked or expired token is renewed once
                    break
        except (httpx.HTTPError, TimeoutError, UpstreamError) as exc:
            log.warning("identify.names.mtn_momo.failed", error=type(exc).__name__, detail=str(exc))
            return UNAVAILABLE
        if status != 200 or not isinstance(body, dict):
            code = body.get("code") if isinstance(body, dict) else None
            log.info("identify.names.mtn_momo.unresolved", status=status,
                     code=code if isinstance(code, str) else None)
            return UNAVAILABLE
        name = clean_name(body.get("name"))
        if name is None:
            parts = [clean_name(body.get("given_name")), clean_name(body.get("family_name"))]
            name = clean_name(" ".join(p for p in parts if p))
        return NameResolution.resolved(name) if name else UNAVAILABLE

    async def _access_token(self, *, force_new: bool = False) -> str:
        async with self._token_lock:
            if not force_new and self._token is not None and self._clock() < self._token[1]:
                return self._token[0]
            self._token = None
            status, body = await request_json(
                self._client, "POST", f"{self._base_url}/collection/token/", timeout=self._timeout,
                auth=self._auth, headers={"Ocp-Apim-Subscription-Key": self._subscription_key},
            )
            if status != 200 or not isinstance(body, dict):
                raise UpstreamError(f"token request answered {status}")
            token, expires_in = body.get("access_token"), body.get("expires_in")
            if not isinstance(token, str) or not token or not _is_positive_number(expires_in):
                raise UpstreamError("token response lacks access_token or expires_in")
            # Renew shortly before expiry so a request never carries a token about to lapse.
            margin = min(60.0, float(expires_in) / 10)
            self._token = (token, self._clock() + float(expires_in) - margin)
            return token


def _is_positive_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 10**7
