"""What several stages' per-record code shares: per-worker resources, on-disk table caches, word lists
and script ranges."""
