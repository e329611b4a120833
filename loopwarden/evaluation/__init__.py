"""Detection measured against annotated loops: the dataset reader and the figures.

``benchmarks/detection_quality.py`` prints them; the tests hold the figures' rules.
"""
