"""Moderation APIs: ``moderation:<provider>`` runs ``Moderate`` requests and returns each
provider's reply as it came (``Response.raw``), through the run's cache like any request, so a
killed run never pays for a finished call twice. The guards in :mod:`localeval.guards.moderation`
read P(harmful) from the reply; this module only talks HTTP (retries, backoff, ``Retry-After``,
concurrency and rate limits: :class:`.async_http.JsonClient`).

Keys and endpoints come from environment variables only (a missing one is one line naming it);
they never enter the identity, the cache, the results or an error message.

=============  ============================================  ==========================================
provider       environment                                   request (public REST documentation)
=============  ============================================  ==========================================
openai         OPENAI_API_KEY, OPENAI_BASE_URL (optional)    POST {base}/moderations {model, input}
azure          AZURE_CONTENT_SAFETY_ENDPOINT,                POST {endpoint}/contentsafety/text:analyze
               AZURE_CONTENT_SAFETY_KEY                      ?api-version=2024-09-01 {text, outputType}
model-armor    MODEL_ARMOR_TEMPLATE (projects/P/locations/   POST {endpoint}/v1/{template}:sanitize-
               L/templates/T), MODEL_ARMOR_TOKEN (an OAuth   UserPrompt {userPromptData: {text}} or
               access token), MODEL_ARMOR_ENDPOINT           :sanitizeModelResponse
               (optional; default the region's endpoint)     {modelResponseData: {text}}
lakera         LAKERA_GUARD_API_KEY, LAKERA_GUARD_URL        POST {url}/v2/guard/results
               (optional)                                    {messages: [{role, content}]}
=============  ============================================  ==========================================
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import LocalevalError
from .api_access import ApiBackend
from .async_http import Call, public_url
from .base import Moderate, Moderation, Progress, Request, Response, only
from .config import DEFAULT_MAX_REPLY_MB
from .options import ModerationOptions

AZURE_API_VERSION = "2024-09-01"
Body = dict[str, Any]  # a request's JSON body, as the provider's REST documentation gives it


@dataclass(frozen=True)
class Provider:
    key_env: str
    endpoint_env: str
    default_endpoint: str | None
    auth: Callable[[str], dict[str, str]]  # key -> headers
    call: Callable[[str, Moderate], tuple[str, Body]]  # (endpoint, request) -> (url, body)


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _openai_call(endpoint: str, request: Moderate) -> tuple[str, Body]:
    settings = dict(request.settings)
    return f"{endpoint}/moderations", {"model": settings.get("model", "omni-moderation-latest"),
                                       "input": request.text}


def _azure_call(endpoint: str, request: Moderate) -> tuple[str, Body]:
    settings = dict(request.settings)
    return (f"{endpoint}/contentsafety/text:analyze?api-version={AZURE_API_VERSION}",
            {"text": request.text,
             "outputType": settings.get("outputType", "EightSeverityLevels")})


def _model_armor_call(template_url: str, request: Moderate) -> tuple[str, Body]:
    if request.role == "assistant":
        return (f"{template_url}:sanitizeModelResponse",
                {"modelResponseData": {"text": request.text}})
    return f"{template_url}:sanitizeUserPrompt", {"userPromptData": {"text": request.text}}


def _lakera_call(endpoint: str, request: Moderate) -> tuple[str, Body]:
    return (f"{endpoint}/v2/guard/results",
            {"messages": [{"role": request.role, "content": request.text}]})


def _model_armor_url(endpoint: str | None) -> str:
    """The template's URL; Model Armor is served per region (modelarmor.<location>.rep.
    googleapis.com) unless MODEL_ARMOR_ENDPOINT says otherwise."""
    template = _env("MODEL_ARMOR_TEMPLATE")
    match = re.fullmatch(r"projects/[^/]+/locations/([^/]+)/templates/[^/]+", template)
    if not match:
        raise LocalevalError(f"MODEL_ARMOR_TEMPLATE must be projects/<project>/locations/"
                             f"<location>/templates/<template>, not {template!r}")
    endpoint = endpoint or f"https://modelarmor.{match.group(1)}.rep.googleapis.com"
    return f"{endpoint.rstrip('/')}/v1/{template}"


PROVIDERS: dict[str, Provider] = {
    "openai": Provider("OPENAI_API_KEY", "OPENAI_BASE_URL", "https://api.openai.com/v1",
                       _bearer, _openai_call),
    "azure": Provider("AZURE_CONTENT_SAFETY_KEY", "AZURE_CONTENT_SAFETY_ENDPOINT", None,
                      lambda key: {"Ocp-Apim-Subscription-Key": key}, _azure_call),
    "model-armor": Provider("MODEL_ARMOR_TOKEN", "MODEL_ARMOR_ENDPOINT", None, _bearer,
                            _model_armor_call),
    "lakera": Provider("LAKERA_GUARD_API_KEY", "LAKERA_GUARD_URL", "https://api.lakera.ai",
                       _bearer, _lakera_call),
}


def _env(name: str) -> str:
    value = os.environ.get(name, "").strip()
    if not value:
        raise LocalevalError(f"environment variable {name} is not set (the moderation APIs "
                             "take keys and endpoints from the environment only; see the "
                             "README's 'Moderation APIs')")
    return value


class ModerationBackend(ApiBackend):
    """One provider's API. Replies are kept whole; a reply that is not a JSON object is retried
    as malformed, and a request that still fails is an error response (never a verdict)."""

    Options = ModerationOptions  # the options it takes (.options: --help reads them there)

    def __init__(self, provider: str, *, concurrency: int = 4, timeout: float = 60.0,
                 max_retries: int = 4, rate_limit: float | None = None,
                 max_reply_mb: float = DEFAULT_MAX_REPLY_MB):
        if provider not in PROVIDERS:
            raise LocalevalError(f"unknown moderation API {provider!r}; available: "
                                 f"{', '.join(PROVIDERS)}")
        self.provider = PROVIDERS[provider]
        key = _env(self.provider.key_env)
        endpoint = os.environ.get(self.provider.endpoint_env, "").strip() or \
            self.provider.default_endpoint
        if provider == "model-armor":
            endpoint = _model_armor_url(endpoint)
        self.endpoint = (endpoint or _env(self.provider.endpoint_env)).rstrip("/")
        self.connect(key, [self.endpoint], self.provider.auth(key), timeout=timeout,
                     max_retries=max_retries, concurrency=concurrency, rate_limit=rate_limit,
                     max_reply_mb=max_reply_mb)
        self.stats = self.client.stats
        # The endpoint is part of the identity (another deployment may answer differently);
        # the key never is.
        self.identity = {"backend": "moderation", "provider": provider,
                         "endpoint": self.scrub(public_url(self.endpoint), 500)}

    def run(self, requests: Sequence[Request],
            progress: Progress | None = None) -> Sequence[Response]:
        asked = only(Moderate, requests, "a moderation backend runs Moderate requests only (use "
                     "it through a moderation guard, e.g. --guard openai-moderation)")
        calls = [Call(*self.provider.call(self.endpoint, r), _keep_object) for r in asked]
        return self.client.post_all(calls, progress)


def _keep_object(reply: Any) -> Moderation:
    if not isinstance(reply, dict):
        raise TypeError("not a JSON object")
    return Moderation(raw=reply)
