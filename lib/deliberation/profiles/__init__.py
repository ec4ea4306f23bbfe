"""Profiles: one YAML file per model setup in ``params/``. :mod:`.profile` loads and validates
them, :mod:`.cost` reads their ``cost:`` section, :mod:`.model_label` says in words what a
profile runs."""
