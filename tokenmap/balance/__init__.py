"""A map set for several tasks with a fair budget: the budgets (:mod:`.budget`), each task's token stream
and map (:mod:`.streams`) and teacher transcripts (:mod:`.teacher`), the divergence D_T (:mod:`.divergence`),
the plan (:mod:`.plan`) and the written map set (:mod:`.sections`)."""
