"""The classroom: what the teacher page shows and sends (the class, pushes, read-only copies, answers) and who
may open it."""
