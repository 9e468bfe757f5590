"""The token map (:mod:`.suffixmap`), its file (:mod:`.schema`, :mod:`.mapfile`) and the audio recall
index (:mod:`.recallindex`) with its fingerprints (:mod:`.audio_fingerprints`)."""
