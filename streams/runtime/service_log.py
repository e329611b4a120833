"""The logger of loopwarden's Faust/mode services (app, consumer, producer, sensors).

mode names a service's logger after its class's module, which put "Starting…" and
"Stopping…" of every service under ``loopwarden.*`` at info. They log here instead,
and the worker keeps this logger at warning unless ``log_level`` is debug.
"""

from __future__ import annotations

import logging

SERVICE_LOG = logging.getLogger("loopwarden.services")
