"""Companion library for the CrossProfile and DHD papers.

Subpackages: ``inference`` (backends, cache, request settings, sim and serve-sim),
``crossprofile`` (templates, verifier, tasks, scoring), ``datasets`` (DHD benchmarks and graders)
and ``stats``; modules ``params`` (profiles), ``runs``, ``tables``, ``plots``, ``provenance``,
``seeds`` and ``smoke``.
"""

__version__ = "0.1.0"
