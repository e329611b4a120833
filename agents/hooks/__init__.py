"""HTTP hooks of coding agents (Claude Code), answered by the worker: no agent-side code."""
