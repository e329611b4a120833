"""``loopwarden gateway``: the no-code way in — an HTTP gateway between any agent and its
model that watches every step (see ``docs/gateway.md``)."""
