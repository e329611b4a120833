"""LanceDB persistence of memories and task experience (the memory issue fills this in)."""
