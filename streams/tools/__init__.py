"""Tools beside the client and the worker: the embedded broker, topic creation, audit replay."""
