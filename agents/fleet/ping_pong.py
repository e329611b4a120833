"""Ping-pong: two agents of one family passing the same request and answer back and forth.

The family's messages are read in order: a message turn (``turn: "message"``, its
text in ``result``, else ``action_name``), and a delegated loop's ``task`` as a
message of the agent that delegated. A message answers the last substantial
message of *another* agent: that pair is an exchange (asker, answerer, request,
answer). An exchange whose answer is the same (``fleet.ping_pong_answer_similarity``
on masked word sketches of first lines, and ``fleet.ping_pong_body_similarity`` on
what follows: a page seen, a result) as an earlier exchange's of the same two
agents, to a request that is the same or reworded
(``fleet.ping_pong_request_similarity``), repeats it; ``fleet.ping_pong_repeats`` of
them is a ping-pong. A first line that is a bare label ("Updated Ledger:") is
judged by what follows it. Messages shorter than ``fleet.ping_pong_min_words`` words
("OK", "Next speaker X") are not compared and do not break an exchange. Only
named agents (``agent``) ping-pong: a single agent's loop is the monitor's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.fleet import texts
from loopwarden.agents.fleet.detector import (
    FamilyObservation,
    FleetDetector,
    FleetFinding,
    register,
)
from loopwarden.agents.spin.normalise import head_and_body, similarity, sketch, word_count

MAX_EXCHANGES = 32
"""Distinct exchanges remembered per family."""
MAX_EVENT_IDS = 8

# one exchange: asker, answerer, request sketch, answer sketch, count, event ids
Exchange = list[Any]


def _said(text: str, min_words: int) -> list[list[int]] | None:
    """The sketches of what a message says (its first substantial line) and of what
    follows (what was seen), or None for a routine message."""
    if word_count(text) < min_words:
        return None
    head, body = head_and_body(text)
    if body and (head.rstrip().endswith(":") or word_count(head) < 2):
        head, body = body, ""  # a bare label ("Updated Ledger:") says nothing: judge the rest
    return [sketch(head), sketch(body)]


def _same_answer(a: list[list[int]], b: list[list[int]], head: float, body: float) -> bool:
    """Same first line, and what follows it (a page seen, a result) alike too."""
    return similarity(a[0], b[0]) >= head and similarity(a[1], b[1]) >= body


@register
@dataclass(slots=True)
class PingPong(FleetDetector):
    """The family's last substantial message, and its exchanges so far."""

    name = "ping_pong"
    last: list[Any] = field(default_factory=list)
    """[agent, sketch, event id] of the last substantial message."""
    exchanges: list[Exchange] = field(default_factory=list)

    def observe(self, seen: FamilyObservation) -> FleetFinding | None:
        payload = seen.event.payload
        cfg = seen.settings
        finding = None
        if seen.task_known and payload.task and seen.node.parent in seen.family.loops:
            asker = seen.family.loops[seen.node.parent].agent
            said = _said(payload.task, cfg.ping_pong_min_words)
            if said is not None:
                finding = self._message(asker, said, seen.event.event_id, seen)
        text = payload.result or payload.action_name
        if payload.turn == "message" and text and payload.agent:
            said = _said(text, cfg.ping_pong_min_words)
            if said is not None:
                finding = self._message(seen.node.agent, said, seen.event.event_id, seen) or finding
        return finding

    def _message(
        self, agent: str, said: list[list[int]], event_id: str, seen: FamilyObservation
    ) -> FleetFinding | None:
        previous, self.last = self.last, [agent, said, event_id]
        if not previous or previous[0] == agent:
            return None
        asker, request, request_id = previous
        cfg = seen.settings
        for exchange in self.exchanges:
            if (
                exchange[0] == asker
                and exchange[1] == agent
                and _same_answer(
                    exchange[3],
                    said,
                    cfg.ping_pong_answer_similarity,
                    cfg.ping_pong_body_similarity,
                )
                and similarity(exchange[2][0], request[0]) >= cfg.ping_pong_request_similarity
            ):
                exchange[4] += 1
                exchange[5] = (exchange[5] + [request_id, event_id])[-MAX_EVENT_IDS:]
                self.exchanges.remove(exchange)
                self.exchanges.append(exchange)  # the most recent last
                if exchange[4] < cfg.ping_pong_repeats:
                    return None
                return FleetFinding(
                    kind=self.name,
                    reason=texts.ping_pong_reason(asker, agent, exchange[4]),
                    suggestions=texts.PING_PONG_SUGGESTIONS,
                    event_ids=tuple(exchange[5]),
                    agents=(asker, agent),
                    count=exchange[4],
                )
        self.exchanges.append([asker, agent, request, said, 1, [request_id, event_id]])
        if len(self.exchanges) > MAX_EXCHANGES:
            del self.exchanges[0]
        return None

    def snapshot(self) -> Any:
        return [self.last, self.exchanges]

    @classmethod
    def restore(cls, data: Any) -> PingPong:
        last, exchanges = data
        return cls(list(last), [list(e) for e in exchanges])
