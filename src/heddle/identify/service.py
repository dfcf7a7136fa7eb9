"""IdentifyService: one request in, one Identify Result out. No HTTP, auth or billing here."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable

import httpx

from heddle.config import Settings
from heddle.db.base import Database, utcnow
from heddle.errors import HeddleError
from heddle.identify.detect import detect, serves
from heddle.identify.directory import Directory
from heddle.identify.names import MtnMomoResolver, NameResolverRegistry, PaystackResolver
from heddle.identify.names.base import NameResolver
from heddle.identify.rails import HANDLERS, LookupContext, RailOutcome
from heddle.identify.schemas import (
    NAME_RESOLUTION_RAILS,
    AccountInfo,
    Identification,
    IdentifyRequest,
    NameResolutionStatus,
    ResultKind,
    Status,
)
from heddle.observability.logging import get_logger

log = get_logger(__name__)


class IdentifyService:
    def __init__(self, directory: Directory, names: NameResolverRegistry, *,
                 clock: Callable[[], dt.datetime] = utcnow, db: Database | None = None,
                 refresh_interval_s: float = 5.0):
        self.directory = directory
        self.names = names
        self._clock = clock
        self._db = db
        self._refresh_interval_s = refresh_interval_s

    async def identify(self, request: IdentifyRequest) -> Identification:
        """Resolve `request.identifier`; raises HeddleError `invalid_identifier` or
        `ambiguous_identifier` (neither is billed)."""
        raw = request.identifier
        if not raw.isascii() or not raw.isprintable():
            raise HeddleError("invalid_identifier",
                              "The identifier contains characters that no rail uses.",
                              details={"field": "identifier"})
        await self._refresh_directory()
        now = self._clock()
        outcome = self._lookup(raw, request, now)
        outcome, account = await self._account(outcome, request.account_number,
                                               request.account_number_sent)
        identified = outcome.result is ResultKind.IDENTIFIED
        return Identification(
            result=outcome.result, rail=outcome.rail, country=outcome.country,
            institution=outcome.institution if identified else None,
            reachable_rails=outcome.reachable_rails if identified else (),
            account=account, identified_at=now if identified else None, detail=outcome.detail,
            # Only an active institution is identified (docs/identify.md, "Billing").
            status=Status.ACTIVE if identified else outcome.status,
            successor=None if identified else outcome.successor,
            source=None if identified else outcome.source,
        )

    def _lookup(self, raw: str, request: IdentifyRequest, now: dt.datetime) -> RailOutcome:
        ctx = LookupContext(self.directory, now.date())
        if request.rail is None:
            handler, parsed = detect(raw, request.country, ctx)
        else:
            handler = HANDLERS[request.rail]
            if not serves(handler, request.country, ctx):
                covered = ", ".join(sorted(handler.served(ctx) or ()))
                return RailOutcome(ResultKind.UNSUPPORTED, handler.rail,
                                   detail=f"The {handler.rail.value} rail covers {covered} only.")
            parsed = handler.parse(raw, request.country)
        return handler.lookup(parsed, request.account_number, ctx)

    async def _account(self, outcome: RailOutcome, compact: str | None,
                       sent: str | None) -> tuple[RailOutcome, AccountInfo | None]:
        """`account.number` is the number as sent (spec); the rail's normalised form (e.g. a
        wallet in E.164) is what the holder-name resolvers are asked about. A `candidate`
        institution (not proven by the identifier) becomes `identified` only when its holder-
        name resolution answers."""
        if compact is None or sent is None:
            return outcome, None
        if outcome.rail not in NAME_RESOLUTION_RAILS:
            return outcome, AccountInfo(sent, NameResolutionStatus.NOT_SUPPORTED)
        institution = outcome.institution if outcome.result is ResultKind.IDENTIFIED \
            else outcome.candidate
        if institution is None:
            return outcome, AccountInfo(sent, NameResolutionStatus.UNAVAILABLE)
        number = outcome.account_number or compact
        resolution = await self.names.resolve(outcome.rail, institution, number)
        if outcome.result is not ResultKind.IDENTIFIED:
            if resolution.status is not NameResolutionStatus.RESOLVED:
                return outcome, AccountInfo(sent, NameResolutionStatus.UNAVAILABLE)
            outcome = dataclasses.replace(
                outcome, result=ResultKind.IDENTIFIED, institution=institution,
                reachable_rails=institution.reachable_rails, candidate=None, detail=None)
        return outcome, AccountInfo(sent, resolution.status, resolution.name)

    async def _refresh_directory(self) -> None:
        if self._db is None:
            return
        try:
            await self.directory.refresh_if_stale(self._db, self._refresh_interval_s)
        except Exception:  # keep answering from the rows already loaded
            log.exception("identify.directory.refresh_failed")


def build_name_resolvers(settings: Settings, http_client: httpx.AsyncClient) -> list[NameResolver]:
    """The adapters whose credentials are configured; none means names are `unavailable`."""
    resolvers: list[NameResolver] = []
    if settings.momo_base_url and settings.momo_subscription_key and settings.momo_api_user \
            and settings.momo_api_key:
        resolvers.append(MtnMomoResolver(
            http_client, base_url=settings.momo_base_url,
            subscription_key=settings.momo_subscription_key, api_user=settings.momo_api_user,
            api_key=settings.momo_api_key, target_environment=settings.momo_target_environment,
            timeout=settings.name_resolution_timeout))
    if settings.paystack_secret_key:
        resolvers.append(PaystackResolver(
            http_client, secret_key=settings.paystack_secret_key,
            base_url=settings.paystack_base_url, timeout=settings.name_resolution_timeout))
    return resolvers


def build_identify_service(settings: Settings, http_client: httpx.AsyncClient, *,
                           db: Database | None = None,
                           directory: Directory | None = None) -> IdentifyService:
    """The service as `heddle serve` runs it. Pass `db` so imported directories are loaded
    and re-read when `heddle identify import` changes them."""
    names = NameResolverRegistry(build_name_resolvers(settings, http_client),
                                 cache_ttl=settings.name_cache_ttl)
    if directory is None:
        directory = Directory()
        directory.warm_up()
    return IdentifyService(directory, names, db=db)
