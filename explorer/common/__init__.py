"""What every layer of the app reads: launch settings, limits, control names, user errors."""
