"""Diverse Hypothesis Deliberation (paper 2): synthetic problems, message format, pools, replays, labels, the protocol through the cache, reports and the authors' released rows."""
