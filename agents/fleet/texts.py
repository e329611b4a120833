"""What the fleet role tells agents and operators, in one place."""

from __future__ import annotations

from collections.abc import Sequence

STEP_WORDS = {
    "warn": "Every live loop of this family has been warned.",
    "escalate": "This family was warned before and keeps looping.",
    "stop": "Every live loop of this family has been told to stop.",
}


def chain(agents: Sequence[str]) -> str:
    """``A → B → A`` (at most the last 8 hops)."""
    shown = list(agents[-8:])
    prefix = "… → " if len(agents) > 8 else ""
    return prefix + " → ".join(shown)


def cycle_reason(agent: str, count: int, path: Sequence[str]) -> str:
    return (
        f"{agent} was given the same task {count} times in one family of delegated runs "
        f"({chain(path)}): the agents are handing the work around in a circle, each run "
        "starting with a fresh step budget"
    )


CYCLE_SUGGESTIONS = (
    "Answer with what you have instead of delegating the same task again.",
    "If the task cannot be done with the tools at hand, say so and stop.",
)


def ping_pong_reason(asker: str, answerer: str, count: int) -> str:
    return (
        f"{asker} asked {answerer} the same thing {count} times and got the same answer "
        "each time: the two agents are passing the request back and forth"
    )


PING_PONG_SUGGESTIONS = (
    "Change the request, or act on the answer already given.",
    "If the answer does not help, ask a different agent or report that the step is blocked.",
)

BUDGET_UNITS = {"steps": "steps", "failures": "failed actions", "tokens": "tokens", "cost": "USD"}


def budget_reason(what: str, spent: float, level: float, stop: bool) -> str:
    amount = f"{spent:.2f}" if what == "cost" else f"{int(spent)}"
    limit = f"{level:.2f}" if what == "cost" else f"{int(level)}"
    word = "stop" if stop else "warning"
    return (
        f"the family of delegated runs has used {amount} {BUDGET_UNITS[what]}, past its "
        f"{word} level of {limit}"
    )


BUDGET_SUGGESTIONS = (
    "Finish with the best answer you have now.",
    "Do not start new sub-tasks or delegations.",
)


def timeline(kind: str, step: str, reason: str, suggestions: Sequence[str]) -> str:
    """The message an agent reads in its timeline: the monitor's family of texts (what
    repeated, then what to do), about the family of delegated runs."""
    lines = [f"⚠️ [LOOP] In your family of delegated runs ({kind}): {reason}."]
    if step == "stop":
        lines.append("STOP NOW: end this run and report what you have.")
    elif suggestions:
        lines.append(" ".join(suggestions))
    lines.append(STEP_WORDS.get(step, ""))
    return "\n".join(line for line in lines if line)
