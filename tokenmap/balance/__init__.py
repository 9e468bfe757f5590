"""A map set for several tasks with a fair budget: :mod:`.budget`, :mod:`.divergence`, :mod:`.sections`."""
