"""Retrieval: the stores' Protocols, fusion and the routed strategies (the stores and models themselves are
in ``backends``)."""
