"""Settings of the framework adapters (``LOOPWARDEN_ADAPTERS__*``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class AdapterSettings(BaseModel):
    """How the adapters put loopwarden's warnings in front of the model."""

    model_config = ConfigDict(frozen=True)

    verdict_wait_ms: float = Field(
        200.0,
        ge=0,
        description="Before a model call, wait at most this long after the last published "
        "tool result for the worker's verdict on it (it ends when the worker answered: "
        "see verdicts), so a warning reaches the very next call. "
        "Measured with instant models on the embedded broker "
        "(benchmarks/warning_delivery.py, two runs): tool result to injection 31-170 ms "
        "median, 410 ms slowest; 5-8 runs of 8 warned at the very next call at 200 ms "
        "(none at 0), every run stopped by its 10th call (none at 0). 0: never wait "
        "(warnings then reach a fast agent calls later).",
    )
    verdicts: bool = Field(
        True,
        description="The worker answers every action event with a verdict (how many "
        "warnings each answering role sent about it, maybe none) on the verdicts topic, "
        "and the guards end their wait on it: a healthy step waits as long as the worker "
        "takes, not verdict_wait_ms. False: no verdicts sent, the guards wait for a "
        "warning or the bound (as before verdicts existed).",
    )
    shown_warnings: int = Field(
        3,
        ge=1,
        description="The run's latest warnings repeated in the note of every later model "
        "call (the note is not kept in the conversation).",
    )
    memory_scope: str | None = Field(
        None,
        description="Put the memories of this scope that fit a run's task in front of its "
        "model calls (searched once per run at the worker's API, "
        "loopwarden.search_memories); None: off.",
    )
    memory_budget_bytes: int = Field(
        2048, ge=1, le=65536, description="Bytes of memories put in front of a run."
    )
    worker_url: str | None = Field(
        None,
        description="The worker API the memories are asked from (default: this machine's "
        "web port, 6066 as `loopwarden dev` serves it).",
    )
