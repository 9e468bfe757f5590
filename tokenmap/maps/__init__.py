"""The token-map file format: its layouts and constants (:mod:`.schema`), reading and checking a file
(:mod:`.checks`), writing and loading maps and the n-gram lookup (:mod:`.mapfile`), and the suffix map
(:mod:`.suffixmap`)."""
