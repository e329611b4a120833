"""Settings of the fleet role: loop families across agents (``LOOPWARDEN_FLEET__*``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class FleetSettings(BaseModel):
    """What the fleet role finds in a family of loops (a run and the runs it delegated to).

    A family's findings go through one ladder: its first finding warns every live loop
    of the family, its ``ladder_stop_at``-th tells every live loop to stop. A budget's
    stop level stops the family at once. Budgets are off (None) until set: only the
    team knows what a workflow may spend.
    """

    model_config = ConfigDict(frozen=True)

    cycle_repeats: int = Field(
        3,
        ge=2,
        description="The same agent given the same task this many times in one family "
        "(the root counts) is a delegation cycle, whatever each run's own step count.",
    )
    ping_pong_repeats: int = Field(
        3,
        ge=2,
        description="The same request from one agent and the same answer from another, "
        "this many times in one family, is a ping-pong.",
    )
    ping_pong_answer_similarity: float = Field(
        0.9,
        gt=0,
        le=1,
        description="Two answers whose first lines' masked word sketches are at least this "
        "alike are the same answer (ids, times and numbers are masked).",
    )
    ping_pong_body_similarity: float = Field(
        0.5,
        ge=0,
        le=1,
        description="And what follows their first lines (a page seen, a result) at least "
        "this alike: scrolling a page that changes is progress, not a ping-pong.",
    )
    ping_pong_request_similarity: float = Field(
        0.5,
        gt=0,
        le=1,
        description="Two requests at least this alike are the same request, reworded (an "
        "agent that keeps asking gets the same answer to a rephrased request too).",
    )
    ping_pong_min_words: int = Field(
        5,
        ge=1,
        description="Shorter messages ('OK', 'Next speaker X') are routine: not compared, "
        "and they do not break an exchange.",
    )
    ladder_stop_at: int = Field(
        2,
        ge=1,
        description="The family's Nth finding tells every live loop to stop (the first "
        "warns them all; 1: stop at the first finding).",
    )
    budget_steps_warn: int | None = Field(None, ge=1, description="Family steps: warn level.")
    budget_steps_stop: int | None = Field(None, ge=1, description="Family steps: stop level.")
    budget_failures_warn: int | None = Field(
        None, ge=1, description="Failed actions summed over the family: warn level."
    )
    budget_failures_stop: int | None = Field(
        None, ge=1, description="Failed actions summed over the family: stop level."
    )
    budget_tokens_warn: int | None = Field(
        None,
        ge=1,
        description="Tokens summed over the family (resource_usage.total_tokens, else "
        "input_tokens + output_tokens, when events carry them): warn level.",
    )
    budget_tokens_stop: int | None = Field(None, ge=1, description="Tokens: stop level.")
    budget_cost_warn: float | None = Field(
        None, gt=0, description="Cost summed over the family (resource_usage.cost_usd): warn."
    )
    budget_cost_stop: float | None = Field(None, gt=0, description="Cost: stop level.")
    outage_loops: int = Field(
        5,
        ge=2,
        description="The same tool failing with the same error (normalised) in this many "
        "distinct loops within outage_window_s is an outage: one fleet warning, each "
        "affected loop is told, and the monitor stops counting those failures against "
        "the agents.",
    )
    outage_window_s: float = Field(60.0, gt=0, description="Event-time window of an outage.")
    outage_failure_share: float = Field(
        0.5,
        gt=0,
        le=1,
        description="A failure counts towards an outage only while at least this share of "
        "its tool's last 20 calls failed (5 seen at least, in two loops or more) and that "
        "is a change from the tool's usual failure rate (outage_significance): a tool that "
        "never works, or fails routinely for agents' own reasons, is not down.",
    )
    outage_significance: float = Field(
        1e-5,
        gt=0,
        lt=1,
        description="How surprising the recent failures must be for a tool to be down: "
        "the chance of that many failures among its last 20 calls if each failed at the "
        "tool's usual rate (learned from the stream) is at most this. 1e-5: no outage on "
        "the dev set replayed or on random failures at any rate, a real one found as fast "
        "as with 1e-3 (benchmarks/fleet_findings.py).",
    )
    outage_baseline_calls: int = Field(
        1000,
        ge=20,
        description="The horizon of a tool's usual failure rate, in calls (older calls "
        "weigh less and less). Until 20 calls from two loops or more are behind it, the "
        "tool has no usual rate and no outage of it is declared.",
    )
    outage_quiet_s: float = Field(
        120.0,
        gt=0,
        description="An outage is over when its error has not been seen for this long "
        "(event time).",
    )
    outage_enabled: bool = Field(True, description="Detect tool outages across loops.")
    live_loop_ttl_s: float = Field(
        900.0,
        gt=0,
        description="A loop of the family with no event for this long (event time), or one "
        "that ended, is no longer live: family warnings are not sent to it.",
    )
    idle_family_ttl_s: float = Field(
        3600.0,
        gt=0,
        description="A family with no event for this long (event time) starts afresh and "
        "its state is expired.",
    )
    max_loops: int = Field(
        256,
        ge=2,
        description="Loops remembered per family; the oldest finished ones are forgotten "
        "first (counts and budgets keep every loop).",
    )

    @model_validator(mode="after")
    def _warn_below_stop(self) -> FleetSettings:
        for name in ("steps", "failures", "tokens", "cost"):
            warn = getattr(self, f"budget_{name}_warn")
            stop = getattr(self, f"budget_{name}_stop")
            if warn is not None and stop is not None and warn >= stop:
                raise ValueError(
                    f"fleet.budget_{name}_warn ({warn}) must be below "
                    f"fleet.budget_{name}_stop ({stop})"
                )
        return self
