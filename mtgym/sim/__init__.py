"""The evolving state and its exact, event-driven dynamics."""
