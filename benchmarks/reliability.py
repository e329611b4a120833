"""The fault suite (issue 15): crashes, bad input, failover, broker outage, secrets, the API.

Prints a table of goals against measurements and writes JSON to benchmarks/results/.
Exit code 1 when a goal is missed. See loopwarden/faults/ for each scenario.

    .venv/bin/python benchmarks/reliability.py             # full: 3 seeds of crash and bad input
    .venv/bin/python benchmarks/reliability.py --reduced   # what make test runs
"""

import sys

from loopwarden.faults.suite import main

if __name__ == "__main__":
    sys.exit(main())
