"""The decoder. Whisper's logit rules (:mod:`.rules`, :mod:`.ct2math`, :mod:`.special`); the verify loop and
its replay (:mod:`.speculative`); the drafters, where drafts come from (:mod:`.drafters`; a map's in
:mod:`.follow`, audio recall's in :mod:`.recall`); how far they draft (:mod:`.control`); the window gate
(:mod:`.gate`); a model's drafting and each window's choice of loop or plain ``generate`` (:mod:`.model_drafting`);
plain decoding (:mod:`.plain`); the loop stop (:mod:`.loops`); the guards (:mod:`.guarding`, :mod:`.copies`);
the cost curve (:mod:`.cost`) and its calibration (:mod:`.calibration`)."""
