"""The toy experiment's sim: it doubles the number of the prompt, right every time."""

import re

from deliberation.inference.sim_registry import SimAnswer, SimContext, sim_behaviour


@sim_behaviour("toy.double")
def double(context: SimContext) -> SimAnswer:
    return SimAnswer(str(2 * int(re.search(r"\d+", context.prompt).group())))
