"""The switch for loopwarden's compiled code paths.

Where a compiled path exists (the redactor's Hyperscan prefilter, the monitor's word
scan), a pure-Python twin gives the same outputs; ``LOOPWARDEN_NO_EXTENSIONS=1`` runs
the twins even where the compiled paths are installed (the tests run both ways).
"""

from __future__ import annotations

import os

NO_EXTENSIONS = "LOOPWARDEN_NO_EXTENSIONS"
"""Set to 1 to run the pure-Python code paths even where a compiled one is installed."""


def extensions_disabled() -> bool:
    """``LOOPWARDEN_NO_EXTENSIONS`` is set to something other than 0 or nothing."""
    return os.environ.get(NO_EXTENSIONS, "").strip() not in ("", "0")
