"""The decoder: Whisper's logit rules and greedy decoding step by step by them (:mod:`.rules`, :mod:`.ct2math`),
the verify loop and its replay without the model (:mod:`.speculative`), the drafters
(:mod:`.drafters`; a token map's in :mod:`.follow`, audio recall's in :mod:`.recall`), the one rule for how
far they draft and what they learn (:mod:`.control`), the window gate (:mod:`.gate`), a model's drafting state
and its decision a window (:mod:`.drafting`), plain decoding (:mod:`.plain`), the calibrated cost of a verify
pass (:mod:`.cost`) and the guard that decodes a suspicious window again (:mod:`.guarding`)."""
