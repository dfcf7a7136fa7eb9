"""One module per rail; `HANDLERS` maps each rail to its handler."""

from __future__ import annotations

from heddle.identify.rails.base import LookupContext, RailHandler, RailOutcome
from heddle.identify.rails.gh_bank import GhanaBankRail
from heddle.identify.rails.iban import IbanRail
from heddle.identify.rails.ifsc import IfscRail
from heddle.identify.rails.momo import MomoRail
from heddle.identify.rails.nuban import NubanRail
from heddle.identify.rails.routing_number import RoutingNumberRail
from heddle.identify.rails.sort_code import SortCodeRail
from heddle.identify.rails.swift import SwiftRail
from heddle.identify.schemas import Rail

HANDLERS: dict[Rail, RailHandler] = {
    handler.rail: handler
    for handler in (SwiftRail(), IbanRail(), RoutingNumberRail(), SortCodeRail(), IfscRail(),
                    NubanRail(), MomoRail(), GhanaBankRail())
}

__all__ = ["HANDLERS", "LookupContext", "RailHandler", "RailOutcome"]
