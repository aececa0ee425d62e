"""Pipeline stages: pure decision cores (segmenter, distiller, consolidator) and their thin stage adapters."""
