"""mix: domain rules, the mixture plan and sampling (``mixture``); the data mixing law (``mixing_law``)."""
