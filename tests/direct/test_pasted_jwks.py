"""A JWKS pasted into the workspace (no URI to fetch), and its precedence over the URI."""

from __future__ import annotations

import copy

import pytest
from direct_testkit import make_signing_key, sign

from heddle.auth.session_tokens import TokenError


async def test_pasted_jwks_verifies_without_any_fetch(keys, verifier, lookup, jwks_server):
    lookup.add(jwks_json={"keys": [keys["ES256"].jwk, keys["PS256"].jwk]})
    assert (await verifier.verify(sign(keys["ES256"]))).alg == "ES256"
    assert (await verifier.verify(sign(keys["PS256"]))).alg == "PS256"
    assert sum(jwks_server.state.hits.values()) == 0


async def test_pasted_jwks_wins_over_the_uri(keys, verifier, lookup, jwks_server):
    lookup.add(jwks_uri=jwks_server.publish(keys["RS256"].jwk),
               jwks_json={"keys": [keys["ES256"].jwk]})
    await verifier.verify(sign(keys["ES256"]))
    with pytest.raises(TokenError, match="pasted JWKS has no such key"):
        await verifier.verify(sign(keys["RS256"]))
    assert jwks_server.hits() == 0


async def test_editing_the_pasted_jwks_takes_effect_at_once(keys, verifier, lookup):
    document = {"keys": [keys["ES256"].jwk]}
    lookup.add(jwks_json=document)
    await verifier.verify(sign(keys["ES256"]))
    rotated = make_signing_key("ES256", kid="rotated")
    lookup.add(jwks_json={"keys": [rotated.jwk]})  # the old key removed from the workspace
    await verifier.verify(sign(rotated))
    with pytest.raises(TokenError, match="unknown kid"):
        await verifier.verify(sign(keys["ES256"]))


async def test_the_parsed_pasted_set_is_reused(keys, verifier, lookup):
    lookup.add(jwks_json={"keys": [keys["RS256"].jwk]})
    await verifier.verify(sign(keys["RS256"]))
    # The lookup returns a fresh dict (as from the database) with the same content.
    lookup.add(jwks_json=copy.deepcopy({"keys": [keys["RS256"].jwk]}))
    await verifier.verify(sign(keys["RS256"]))
    assert len(verifier._pasted) == 1


@pytest.mark.parametrize("document", [{}, {"keys": "nope"}, {"keys": {}}, {"jwks": []}])
async def test_invalid_pasted_jwks(document, keys, verifier, lookup):
    lookup.add(jwks_json=document)
    with pytest.raises(TokenError, match="pasted JWKS is invalid: not a JWKS document"):
        await verifier.verify(sign(keys["ES256"]))


async def test_pasted_jwks_that_is_not_json_data(keys, verifier, lookup):
    lookup.add(jwks_json={"keys": [object()]})
    with pytest.raises(TokenError, match="not JSON data"):
        await verifier.verify(sign(keys["ES256"]))
