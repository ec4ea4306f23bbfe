"""The sim's behaviours for memory runs: the decision maker and labellers both benchmarks share
(:mod:`.mechanism`), and how it reads each benchmark's facts (:mod:`.crossprofile`,
:mod:`.hiddenbench`)."""
