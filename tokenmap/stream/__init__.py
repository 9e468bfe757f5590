"""Live transcription of a growing buffer: the transcriber (:mod:`.live`), its drafter from the previous
hypothesis (:mod:`.draft`), streaming metrics (:mod:`.metrics`) and audio sources (:mod:`.audio`)."""
