"""Algorithmic tasks: data a small model learns exactly, made from a few settings (a task spec).

A task spec is a plain dict, {"name": ..., settings..., "prompt": ..., "answer": ...}; it travels in
TrainConfig.task and so is saved in a checkpoint's config.json under train_config.task, where a script finds
the prompt format (model_core.data.tasks.modular: "{a} {b} =" answered by "{c}", read with the checkpoint's own
word tokenizer). Two kinds of data come out of a task:
  * examples (modular addition, copy, reverse, sort): a tensor [N, 2, T], each example's input row and target
    row, the target -1 where nothing is predicted (only the answer is scored); the train and test examples are
    disjoint (the test pairs are never trained on);
  * a token stream (repeated random tokens, for induction heads): a 1-D tensor cut into windows like a text."""
