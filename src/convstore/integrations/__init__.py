"""Framework integrations: each module imports its framework and is an optional extra."""
