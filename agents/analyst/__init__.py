"""The reflection analyst: model-backed or heuristic analysis of reflection requests."""
