"""Direct mode through HTTP: a real local JWKS server and tokens signed with PyJWT."""

from __future__ import annotations

import pytest

from direct.direct_testkit import JwksServer, make_signing_key

ALGS = ["RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512"]


@pytest.fixture(scope="session")
def signing_keys():
    return {alg: make_signing_key(alg, f"{alg.lower()}-http") for alg in ALGS}


@pytest.fixture(scope="module")
def jwks_http():
    return JwksServer()


@pytest.fixture
def direct_tenant(tenant, jwks_http, signing_keys):
    """A tenant whose workspace trusts a JWKS URI (every algorithm) and one browser origin."""
    path = f"/{tenant.workspace_id}/jwks.json"
    url = jwks_http.publish(*(k.jwk for k in signing_keys.values()), path=path)
    tenant.update(jwks_uri=url, allowed_origins=["https://app.example.com"])
    tenant.jwks_path = path
    return tenant
