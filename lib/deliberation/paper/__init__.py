"""The paper build: which notebooks make the paper and what each reads (:mod:`.manifest`),
running the stale ones (:mod:`.build`), what a run would send and cost (:mod:`.plan`), the
outputs ``figures/README.md`` promises (:mod:`.outputs`), the HTML report (:mod:`.site`),
the one benchmark table (:mod:`.bench`), and whether a grid is big enough (:mod:`.power`, the
preregistered tests' power). Commands: ``deliberation paper|plan|report|bench|power``."""
