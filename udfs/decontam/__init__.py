"""decontam: evaluation sets, their n-gram index and the lookups against it (``ngram_index``)."""
