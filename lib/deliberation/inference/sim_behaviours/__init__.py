"""Sim behaviours, one module per experiment. Importing this package registers them all;
add a module here (and to the import list) to teach the sim a new kind of request. Behaviour
modules import ``deliberation.inference.sim_registry`` only, never the sim backend."""

from deliberation.inference.sim_behaviours import (  # noqa: F401
    crossprofile,
    dhd,
    hiddenbench,
    natural,
    plumbing,
)
