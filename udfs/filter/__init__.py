"""filter: the named rules (``rules``) over quality signals (``quality``), language ID (``langid``),
n-gram LM perplexity (``perplexity``, ``ngram_lm``) and C4's bad-words rule (``badwords``)."""
