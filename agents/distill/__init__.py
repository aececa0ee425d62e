"""Topic-level assembly of the extractive distiller (the public entry is :mod:`agents.distiller`)."""
