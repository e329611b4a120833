"""Experience replay (seed 004): learn task paths from explorations, advise the next start."""
