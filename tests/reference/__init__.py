"""Reference implementations used only by tests (the env's compiled step is checked
against them bit for bit)."""
