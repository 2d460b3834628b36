"""The tasks' names in the app and the presets' settings, as plain data (no torch: the page lists them before
torch is imported)."""

# The lighter grokking run (the grokking preset): p = 59 and half of the pairs groks on 2 cores in minutes (30 %
# did not within 4,000 steps); Nanda et al.'s p = 113 and 30 % is ModularAddition()'s default (docs/circuits.md:
# the reference run)
GROKKING_TASK = {"name": "modular-addition", "p": 59, "train_fraction": 0.5, "seed": 0}
# The induction-phase preset's data: 64 random tokens, segments of 8-24 tokens each shown three times (a third
# showing gives copying more to earn than a second alone: in one comparison the induction score crossed 0.3 at
# step 350 instead of 550; docs/circuits.md)
REPEATS_TASK = {"name": "repeated-tokens", "copies": 3}
# trained on every training example at each step (Nanda et al.): the batch is the training set, one evaluation
# pass covers every example (the Train tab and the command line both follow this)
FULL_BATCH_TASKS = ("modular-addition",)
# one long token stream cut into windows, as a text is (the other tasks are whole examples, prompt then answer)
STREAM_TASKS = ("repeated-tokens",)
# the Data tab's names for the tasks, with their settings (the presets' own)
CHOICES = {
    "task: modular addition": GROKKING_TASK,
    "task: repeated random tokens": REPEATS_TASK,
    "task: copy": {"name": "copy"},
    "task: reverse": {"name": "reverse"},
    "task: sort": {"name": "sort"},
}
