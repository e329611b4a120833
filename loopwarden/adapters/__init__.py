"""Framework adapters: one line puts an agent under loopwarden.

Each adapter is its own module and needs its framework's package (an optional extra):

- :mod:`loopwarden.adapters.langchain` — LangChain v1 / LangGraph middleware
  (``pip install 'loopwarden[langchain]'``);
- :mod:`loopwarden.adapters.pydantic_ai` — a Pydantic AI capability
  (``pip install 'loopwarden[pydantic-ai]'``);
- :mod:`loopwarden.adapters.openai_agents` — OpenAI Agents SDK run hooks, input filter
  and tool guardrail (``pip install 'loopwarden[openai-agents]'``).

Claude Code needs no code: the worker answers its HTTP hooks (``/hooks/claude-code``).
All of them share :class:`~loopwarden.adapters.guard.LoopGuard`, which publishes in the
background and keeps the warnings that come back until the next model call.
"""
