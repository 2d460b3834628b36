"""One builder per tab: each creates its components and wires its events."""
