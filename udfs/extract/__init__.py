"""extract: WARC/ARC records → documents (``warc``), HTML → main text (``html``, ``main_content``,
``boilerplate``, the compiled walk ``_page_walk`` over lexbor's DOM, bound in ``_lexbor``, and the block
scores ``_blocks``), text normalisation (``text``) and the URL block lists (``url_filter``)."""
