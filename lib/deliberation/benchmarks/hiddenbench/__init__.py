"""HiddenBench: the public hidden-profile tasks (:mod:`.tasks`), as a memory benchmark
(:mod:`.memory`) with its sim reading of statements (:mod:`.sim`)."""
