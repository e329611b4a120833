"""Keeps the project's root off ``sys.path`` for the tests.

``python -m pytest`` puts the current directory first on the path, and the root's
``agents/`` folder (installed as ``loopwarden.agents``) would then shadow the
OpenAI Agents SDK's own ``agents`` package. Everything the tests import is
installed (``pip install -e .``), so the root has nothing to add.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != ROOT]
