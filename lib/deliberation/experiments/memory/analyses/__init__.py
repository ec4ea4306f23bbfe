"""Paper 1's analyses behind notebooks 02-05: everything beyond a call and formatting.

- :mod:`.settings`: a notebook's parameters resolved against the profile (budgets, bootstrap
  resamples, seed).
- :mod:`.accuracy`: capacity labels, accuracy tables and policy differences with cluster
  bootstrap intervals, and the cue audit's best heuristic as a baseline row.
- :mod:`.crossprofile`: the H1-H3 rows and table, the 8 ownership cells, classic-cell contrasts
  and the relevance labeller's precision and recall.
- :mod:`.tags`: the social-proof contrast and the tag ablation by cell.
- :mod:`.evidence`: accuracy by net evidence lead, the logistic model and decoy choices.
- :mod:`.figures`: the figures the notebooks save.

Every interval is a 95% percentile bootstrap resampling clusters (CrossProfile templates,
HiddenBench tasks) with :mod:`deliberation.stats`; estimates are in percentage points.
"""
