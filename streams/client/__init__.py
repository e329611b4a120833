"""The client an agent author imports: publishers, subscribers, the warning inbox.

Installed by ``pip install loopwarden`` with few libraries (aiokafka, orjson,
pydantic, the redaction patterns); nothing here imports the worker runtime.
"""
