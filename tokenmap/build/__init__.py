"""Turning a corpus into a token map: reading corpora (:mod:`.corpus`), the style bridge (:mod:`.style`),
the pipeline that tokenizes, counts and writes (:mod:`.builder`) and the self-test replay (:mod:`.selftest`)."""
