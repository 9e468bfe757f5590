"""A map for several tasks with a fair budget: the budgets (:mod:`.budget`), each task's token stream
(:mod:`.streams`) and teacher transcripts (:mod:`.teacher`), the divergence D_T (:mod:`.divergence`),
the plan (:mod:`.plan`) and the written layouts (:mod:`.sections`, :mod:`.merged`)."""
