"""The worker runtime (``pip install 'loopwarden[worker]'``): the Faust app, the one
agent runner and its error policy, the output sink, telemetry and the web endpoints."""
