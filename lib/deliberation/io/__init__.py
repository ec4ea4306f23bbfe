"""Files and places: where things live (:mod:`.paths`), writing without half-written files
(:mod:`.atomic`), reading YAML strictly (:mod:`.yaml_errors`), downloads checked by sha256
(:mod:`.fetch`) and whether a writer's process still runs (:mod:`.processes`)."""
