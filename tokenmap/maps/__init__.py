"""The token map and its file: the map itself, a suffix trie with longest-match lookups (:mod:`.suffixmap`),
the file's layouts and constants (:mod:`.schema`), reading and checking a file (:mod:`.checks`), and writing
and loading maps and map sets (:mod:`.mapfile`); the audio recall index (:mod:`.recallindex`) and its
audio fingerprints (:mod:`.audio_fingerprints`)."""
