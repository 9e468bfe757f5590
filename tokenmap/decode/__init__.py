"""The speculative decoder: Whisper's logit rules (:mod:`.rules`, :mod:`.ct2math`), plain greedy decoding
step by step (:mod:`.reference`), the verify loop (:mod:`.speculative`), the drafters (:mod:`.drafters`,
:mod:`.follow`), their acceptance control (:mod:`.control`), the cost of a verify pass (:mod:`.cost`) and
an offline replay of drafting (:mod:`.replay`)."""
