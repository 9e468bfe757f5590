"""Building a token map from a corpus: reading it (:mod:`.corpus`), Whisper's style (:mod:`.style`),
the pipeline that tokenizes, counts, prunes and writes (:mod:`.builder`), n-gram counting and pruning
(:mod:`.counting`, :mod:`.ngrams`) and the self-test replay (:mod:`.selftest`)."""
