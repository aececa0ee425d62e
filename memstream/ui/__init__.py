"""The inspector web page (``/ui``): look at what memstream remembers about a chat, and why."""
