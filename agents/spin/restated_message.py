"""The same thing said again in other words, with nothing done in between.

An agent that keeps talking without acting — a customer-service agent restating the
same refusal to a user who pushes, asking again for an identifier the user cannot
give — rewords each turn, so word overlap misses it. Message turns (``turn:
"message"``) of one speaker are compared by meaning
(:mod:`~loopwarden.agents.spin.meaning`): when a turn is at least
``detection.restate_similarity`` alike at least ``detection.restate_repeats - 1`` of
the speaker's last ``detection.restate_window - 1`` turns *with nothing else in
between* (no tool call, no other speaker), the speaker is going round in circles.

Anything else the agent does starts a new streak: a tool call gives the agent something
new to say, and in a multi-agent chat the turns between are its colleagues' answers
(:mod:`~loopwarden.agents.spin.repeated_message` judges those chats). The
counterpart's turns (what the person said, :func:`~loopwarden.agents.spin.detector.
said_by_counterpart`) are not the agent's doing and never reach this detector: a support
agent asking again for an order number the person keeps giving is restating, whether
or not the person's replies are published. Turns naming
other quoted targets (``'Sylvia'``, ``'Munich'``) are other requests, however alike
the rest; turns shorter than ``detection.message_min_words`` words ("OK", "Thank
you!") are not compared; a run's end (a terminating message turn, as the adapters
publish after each run of a chat agent) neither counts nor starts a new streak. No
``agent`` field is needed: a single agent's turns are one speaker.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.spin.detector import Detector, Finding, Observation, register
from loopwarden.agents.spin.meaning import cosine, gist, meaning
from loopwarden.agents.spin.normalise import head_and_body, targets, word_count
from loopwarden.agents.spin.repeated_message import message_finding

# one remembered turn: event id, iteration, quoted targets, and its meaning (signed
# bytes), or its gist while no comparison has needed the meaning yet
Turn = list[Any]


def encoded(turn: Turn) -> Turn:
    """``turn`` with its meaning: a turn is encoded only once a streak could reach
    ``restate_repeats`` with it (most message turns are followed by a tool call or
    another speaker, and the encoder is most of the monitor's cost per message turn)."""
    if isinstance(turn[3], str):
        return [*turn[:3], list(meaning(turn[3]))]
    return turn


@register
@dataclass(slots=True)
class RestatedMessage(Detector):
    """The loop's current streak of one speaker's message turns."""

    name = "restated_message"
    speaker: str | None = None
    turns: list[Turn] = field(default_factory=list)

    def observe(self, seen: Observation) -> Finding | None:
        payload = seen.event.payload
        if payload.terminated and payload.turn == "message":
            return None  # a run's end marker: a chat agent's next run continues the streak
        speaker = payload.agent or ""
        if payload.turn != "message" or speaker != self.speaker:
            self.speaker, self.turns = None, []  # something else happened: a new streak
        if payload.turn != "message":
            return None
        self.speaker = speaker
        cfg = seen.settings
        text = payload.result or payload.action_name or ""
        if word_count(text) < cfg.message_min_words:
            return None
        mine: Turn = [seen.event.event_id, seen.iteration, targets(text), gist(text)]
        candidates = [turn for turn in self.turns if turn[2] == mine[2]]
        same: list[Turn] = []
        if len(candidates) + 1 >= cfg.restate_repeats:  # else no streak can be long enough
            mine = encoded(mine)
            self.turns = [encoded(turn) if turn[2] == mine[2] else turn for turn in self.turns]
            same = [
                turn
                for turn in self.turns
                if turn[2] == mine[2] and cosine(turn[3], mine[3]) >= cfg.restate_similarity
            ]
        self.turns = [*self.turns, mine][-(cfg.restate_window - 1) :]
        count = len(same) + 1
        if count < cfg.restate_repeats:
            return None
        return message_finding(self.kind, seen, same, head_and_body(text)[0])

    def snapshot(self) -> Any:
        return [self.speaker, self.turns]

    @classmethod
    def restore(cls, data: Any) -> RestatedMessage:
        speaker, turns = data
        return cls(speaker, [list(turn) for turn in turns])
