"""dedup: text normalisation, shingles, MinHash signatures and LSH bands (``minhash``)."""
