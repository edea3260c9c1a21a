"""pack: tokenizers (``tokenizer``), splitting and best-fit packing (``packing``)."""
