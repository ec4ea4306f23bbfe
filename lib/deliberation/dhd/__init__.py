"""DHD (Wrong-but-Useful) experiment code: prompts now, the experiment stages as they land."""
