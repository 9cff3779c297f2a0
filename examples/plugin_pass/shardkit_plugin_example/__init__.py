"""An example shardkit pass plugin (see pyproject.toml for its entry point)."""
