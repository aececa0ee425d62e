"""Benchmarks: LoCoMo memory retrieval, IRC disentanglement and TIAGE topic shift, each runnable as a module."""
