"""Sets the import path of the tests.

- The project's root comes off ``sys.path``: ``python -m pytest`` puts the current
  directory first, and the root's ``agents/`` folder (installed as
  ``loopwarden.agents``) would then shadow the OpenAI Agents SDK's own ``agents``
  package. Everything the tests import of loopwarden is installed (``pip install -e .``).
- ``tests/support`` goes on: the fault suite (``faultsuite``) and the secrets corpus
  (``secrets_corpus``), which the tests and benchmarks use and the package does not ship.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
SUPPORT = ROOT / "tests" / "support"
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != ROOT]
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))
