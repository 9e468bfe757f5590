"""The decoder: Whisper's logit rules (:mod:`.rules`, :mod:`.ct2math`), plain greedy decoding step by step
(:mod:`.reference`), the verify loop (:mod:`.speculative`), the drafters (:mod:`.drafters`; a token map's in
:mod:`.follow`, audio recall's in :mod:`.recall`), the one rule for how far they draft and what they learn
(:mod:`.control`), the window gate (:mod:`.gate`), a model's drafting state and its decision a window
(:mod:`.drafting`), plain decoding (:mod:`.plain`), the calibrated cost of a verify pass (:mod:`.cost`), the
guard that decodes a suspicious window again (:mod:`.guarding`) and an offline replay of drafting
(:mod:`.replay`)."""
