"""The fault suite (issue 15): crashes, bad input, failover, broker outage, secrets, the API.

Prints a table of goals against measurements and writes JSON to benchmarks/results/.
Exit code 1 when a goal is missed. See tests/support/faultsuite/ for each scenario.

    .venv/bin/python benchmarks/reliability.py             # full: 3 seeds of crash and bad input
    .venv/bin/python benchmarks/reliability.py --reduced   # what make test runs
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from faultsuite.suite import main

if __name__ == "__main__":
    sys.exit(main())
