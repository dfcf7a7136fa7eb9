"""Holder-name resolution on the `nuban`, `momo` and `gh_bank` rails."""

from heddle.identify.names.base import NameResolution, NameResolver
from heddle.identify.names.mtn_momo import MtnMomoResolver
from heddle.identify.names.paystack import PaystackResolver
from heddle.identify.names.registry import NameResolverRegistry

__all__ = ["MtnMomoResolver", "NameResolution", "NameResolver", "NameResolverRegistry",
           "PaystackResolver"]
