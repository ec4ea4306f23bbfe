"""Companion library for the CrossProfile and DHD papers.

Subpackages: ``inference`` (backends, cache, sim server), ``crossprofile``, ``memory``,
``discussion``, ``dhd``, ``datasets``; modules ``stats``, ``tables``, ``plots``, ``runs``.
"""

__version__ = "0.1.0"
