"""A toy memory benchmark added the way docs/extending.md says: this folder and one registration
line (``register_memory_benchmark(TOYBENCH)``). Two
hand-made supplier choices; its sim reads a statement by the option it names and the words
"reliable"/"unreliable", so a memory that keeps the decisive statement answers right."""
