"""What the library writes for people: figures (:mod:`.plots`), tables (:mod:`.tables`) and
HTML pages (:mod:`.pages`), each with its provenance sidecar (:mod:`.provenance`)."""
