"""Agent memory (seed 000 §3, seed 002): scoring, redaction; storage comes with LanceDB."""
