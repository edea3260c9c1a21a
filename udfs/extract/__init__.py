"""extract: WARC/ARC records → documents (``warc``), HTML → main text (``html``, ``main_content``,
``boilerplate``, the compiled walk ``_page_walk`` and block scores ``_blocks``), text normalisation
(``text``) and the URL block lists (``url_filter``)."""
