"""Live transcription of a growing buffer: the transcriber (:mod:`.live`), its drafter from the previous
hypothesis (:mod:`.draft`), segments and the commit policy's helpers (:mod:`.segments`), streaming
metrics (:mod:`.metrics`) and audio sources (:mod:`.audio`)."""
