"""Bodies the console API accepts; unknown fields are refused (400 invalid_request naming them)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from heddle.control.workspaces import SettingsChange

Url = Annotated[str, Field(max_length=2048)]
Rule = Annotated[str, Field(min_length=1, max_length=200)]


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CreateWorkspace(Body):
    name: Annotated[str, Field(min_length=1, max_length=200)]
    credits: Annotated[float, Field(ge=0, le=1_000_000_000)] = 0


class UpdateWorkspace(Body):
    """Any subset; `null` clears a URL, the pasted JWKS or the retention."""

    jwks_uri: Url | None = None
    jwks: dict[str, Any] | None = None
    allowed_origins: Annotated[list[Annotated[str, Field(max_length=300)]], Field(max_length=100)] | None = None
    mint_url: Url | None = None
    realtime: bool | None = None
    rate_limit_per_key: Rule | None = None
    rate_limit_per_subject: Rule | None = None
    retention_days: Annotated[int, Field(ge=0, le=36_500)] | None = None
    webhook_url: Url | None = None
    rotate_request_secret: bool = False
    rotate_webhook_secret: bool = False
    dev: bool = False  # accept http and loopback/private URLs (the server must allow them too)

    def change(self) -> SettingsChange:
        sent = self.model_fields_set

        def cleared(name: str) -> str | None:  # `null` sent -> '' (clear); absent -> None (keep)
            value = getattr(self, name)
            return "" if value is None and name in sent else value

        return SettingsChange(
            jwks_uri=cleared("jwks_uri"), jwks=self.jwks, clear_jwks=self.jwks is None and "jwks" in sent,
            allowed_origins=self.allowed_origins, mint_url=cleared("mint_url"), realtime=self.realtime,
            rate_limit_per_key=self.rate_limit_per_key, rate_limit_per_subject=self.rate_limit_per_subject,
            retention_days=0 if self.retention_days is None and "retention_days" in sent else self.retention_days,
            webhook_url=cleared("webhook_url"), rotate_request_secret=self.rotate_request_secret,
            rotate_webhook_secret=self.rotate_webhook_secret)


class CreateKey(Body):
    mode: Literal["live", "test"] = "live"


class CreateConnection(Body):
    name: Annotated[str, Field(min_length=1, max_length=100)]
    base_url: Annotated[str, Field(min_length=1, max_length=2048)]
    kind: Literal["http", "mcp"] = "http"
    dev: bool = False


class GrantCredits(Body):
    amount: Annotated[float, Field(gt=0, le=1_000_000_000)]
