"""tile-explore's compiler: a Triton-style GPU kernel compiler with every pass instrumented."""
