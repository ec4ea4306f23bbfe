"""A toy experiment added the way docs/extending.md says: this folder and one registration line
(``register_experiment(EXPERIMENT)``). It asks the model to double
numbers; its sim behaviour doubles them right, so every row is correct on the sim."""
