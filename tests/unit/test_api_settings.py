"""The guardrails API refuses to serve overrides without a token; its OpenAPI document."""

import pytest
from pydantic import SecretStr

from loopwarden.agents.guardrails.api import check_api_settings
from loopwarden.agents.guardrails.openapi import openapi_document
from loopwarden.errors import ConfigurationError
from loopwarden.settings import Settings
from loopwarden.streams.runtime.app import create_app


def app_with(**changes):
    settings = Settings().model_copy(update=changes)
    return create_app(settings)


def test_overrides_without_a_token_refuse_to_start():
    with pytest.raises(ConfigurationError, match="LOOPWARDEN_API__TOKEN"):
        check_api_settings(app_with(web_port=8080))


def test_a_token_or_disabled_overrides_start():
    settings = Settings()
    check_api_settings(
        app_with(web_port=8080, api=settings.api.model_copy(update={"token": SecretStr("t")}))
    )
    check_api_settings(
        app_with(web_port=8080, api=settings.api.model_copy(update={"overrides_enabled": False}))
    )
    check_api_settings(app_with(web_port=0))  # no API at all


def test_openapi_describes_the_three_endpoints():
    doc = openapi_document()
    assert set(doc["paths"]) == {
        "/orchestrator/loop-complete",
        "/orchestrator/guardrails-status/{loop_id}",
        "/orchestrator/override-guardrails/{loop_id}",
    }
    override = doc["paths"]["/orchestrator/override-guardrails/{loop_id}"]["post"]
    assert override["security"] == [{"bearer": []}]
    request = doc["components"]["schemas"]["LoopCompleteRequest"]
    assert {"loop_id", "reflection_status", "alignment_score", "drift_score"} <= set(
        request["required"]
    )
    assert "BiasTag" in doc["components"]["schemas"]
