"""loopwarden: keeps LLM agents from spinning, over Kafka."""

__version__ = "0.1.0"
