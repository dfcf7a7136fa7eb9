"""Calls Heddle makes to the caller's backend: hosted tool calls and the relay mint request.

Everything goes through `build_outbound_client`, whose connections can only reach public
addresses (unless private targets are allowed for development), and is signed with
`Service-Signature` (see `heddle.toolhost` for the caller's side).
"""

from heddle.outbound.hosted_tools import HostedCallResult, call_hosted_tool, join_url
from heddle.outbound.mint import MintedToken, MintError, mint_subject_token
from heddle.outbound.retry import RetryPolicy
from heddle.outbound.safe_http import (
    DestinationRefused,
    ResponseRefused,
    ResponseTooLarge,
    build_outbound_client,
    validate_outbound_url,
)
from heddle.outbound.signing import parse_signature_header, sign
from heddle.outbound.token_cache import SubjectTokenCache

__all__ = [
    "DestinationRefused",
    "HostedCallResult",
    "MintError",
    "MintedToken",
    "ResponseRefused",
    "ResponseTooLarge",
    "RetryPolicy",
    "SubjectTokenCache",
    "build_outbound_client",
    "call_hosted_tool",
    "join_url",
    "mint_subject_token",
    "parse_signature_header",
    "sign",
    "validate_outbound_url",
]
