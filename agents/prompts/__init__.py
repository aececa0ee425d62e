"""One module per LLM task: a response model, ``build(...) -> messages``, a ``VERSION`` key."""
