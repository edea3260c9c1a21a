"""DataFrame → DataFrame functions several stages, the report or a notebook apply."""
