"""The fault suite (issue 15): the README's guarantees measured under crashes, bad input,
secrets, failover and broker outages. ``make reliability`` runs it in full
(``benchmarks/reliability.py``); ``tests/integration/test_fault_suite.py`` runs a
reduced form in ``make test``."""
