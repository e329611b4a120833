"""Keyed state shared by every stateful capability: changed states written once per
commit (:mod:`.pending_states`), idle keys reclaimed on event time (:mod:`.expiry`)
following the consumer's assignment (:mod:`.sweeps`), and events moved to their key's
own partition (:mod:`.reroute`), the state an event applies to looked up in one order
(:mod:`.current`), and the wiring that puts them together for a capability
(:mod:`.keyed`)."""
