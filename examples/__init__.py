"""Runnable examples (``docs/policies.md``); run them from the repository's root."""
