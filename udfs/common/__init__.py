"""What several stages share: config plumbing, on-disk table caches, word lists and script ranges."""
