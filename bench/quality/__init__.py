"""Output quality against references: extraction, language ID, dedup and PII evaluations."""
