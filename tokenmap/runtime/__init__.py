"""What runs a Whisper model on this machine: the engine (:mod:`~tokenmap.runtime.engine`), the decoder's
precision (:mod:`~tokenmap.runtime.precision`), stock CTranslate2's worker process
(:mod:`~tokenmap.runtime.stock_worker`), the process-wide thread and malloc policies
(:mod:`~tokenmap.runtime.threads`, :mod:`~tokenmap.runtime.memory`), tokenmap's native libraries
(:mod:`~tokenmap.runtime.nativelib`, :mod:`~tokenmap.runtime.packing`) and ``tokenmap doctor``'s report
(:mod:`~tokenmap.runtime.report`). Importing this package imports none of its modules.
"""
