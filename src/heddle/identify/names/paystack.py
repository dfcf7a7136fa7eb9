"""Paystack "Resolve Account Number" (Nigeria and Ghana).

GET {base}/bank/resolve?account_number=..&bank_code=.. with `Authorization: Bearer <secret>`
answers 200 {"status": true, "message": "Account number resolved",
"data": {"account_number", "account_name", "bank_id"}}; failures answer 4xx with
{"status": false, "message"}.
"""

from __future__ import annotations

import httpx
import phonenumbers

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

DEFAULT_BASE_URL = "https://api.paystack.co"


class PaystackResolver:
    name = "paystack"

    def __init__(self, client: httpx.AsyncClient, *, secret_key: str,
                 base_url: str = DEFAULT_BASE_URL, timeout: float = 5.0):
        if not secret_key:
            raise ValueError("a Paystack secret key is required")
        self._client = client
        self._secret_key = secret_key
        self._base_url = normalise_base_url(base_url)
        self._timeout = timeout

    def supports(self, rail: Rail, institution: Institution) -> bool:
        if institution.external_code(self.name) is None:
            return False
        if rail in (Rail.NUBAN, Rail.GH_BANK):
            return True
        # Nigerian payment service bank wallets are NIP accounts numbered by the phone number.
        return rail is Rail.MOMO and institution.country == "NG"

    async def resolve(self, rail: Rail, institution: Institution,
                      account_number: str) -> NameResolution:
        bank_code = institution.external_code(self.name)
        number = _account_number(rail, account_number)
        if bank_code is None or number is None:
            return UNAVAILABLE
        try:
            status, body = await request_json(
                self._client, "GET", f"{self._base_url}/bank/resolve", timeout=self._timeout,
                params={"account_number": number, "bank_code": bank_code},
                headers={"Authorization": f"Bearer {self._secret_key}",
                         "Accept": "application/json"},
            )
        except (httpx.HTTPError, TimeoutError, UpstreamError) as exc:
            log.warning("identify.names.paystack.failed", error=type(exc).__name__, detail=str(exc))
            return UNAVAILABLE
        if status != 200 or not isinstance(body, dict) or body.get("status") is not True:
            message = body.get("message") if isinstance(body, dict) else None
            log.info("identify.names.paystack.unresolved", status=status,
                     message=message if isinstance(message, str) else None)
            return UNAVAILABLE
        data = body.get("data")
        if not isinstance(data, dict):
            return UNAVAILABLE
        echoed = data.get("account_number")
        if echoed is not None and echoed != number:
            log.warning("identify.names.paystack.mismatch")
            return UNAVAILABLE
        name = clean_name(data.get("account_name"))
        return NameResolution.resolved(name) if name else UNAVAILABLE


def _account_number(rail: Rail, account_number: str) -> str | None:
    """Paystack takes the 10-digit account; a Nigerian wallet is its national number."""
    if rail is Rail.MOMO:
        try:
            number = phonenumbers.parse(account_number, None)
        except phonenumbers.NumberParseException:
            return None
        account_number = phonenumbers.national_significant_number(number)
    return account_number if is_digits(account_number) else None
