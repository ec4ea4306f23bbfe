"""The sim's behaviours for memory runs: the decision maker and labellers every benchmark shares
(:mod:`.mechanism`), reading each benchmark's statements with that benchmark's own reader
(``MemoryBenchmark.sim_reader``)."""
