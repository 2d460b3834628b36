"""App-wide settings chosen at launch (the launch flags: explorer.server.launch)."""
from explorer.common.shipped_list import DEFAULT_MODEL

default_model = DEFAULT_MODEL
lesson_file = None  # --lesson FILE: a lesson file every new page opens on step 1 (checked at start-up)
