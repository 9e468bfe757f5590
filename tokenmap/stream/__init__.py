"""Live transcription of a growing buffer: the transcriber (:mod:`.live`), its drafter from the previous
hypothesis (:mod:`.previous_hypothesis`), streaming metrics (:mod:`.metrics`) and audio sources (:mod:`.audio`)."""
