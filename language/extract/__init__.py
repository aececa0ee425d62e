"""Sentence-level extraction rules (English and Chinese), pure and deterministic.

``text`` (splitting, fillers, questions, jieba tags) · ``person``
(first -> third person, subject attribution) · ``slots`` (attribute/value slot patterns, retractions) ·
``slot_text`` (slot sentences, slot questions, short answers) · ``tasks`` (tasks and decisions) ·
``entities`` (named entities of a sentence, name normalisation, entity types) · ``relations`` (relation
triples of a distillation, for graph memory).
"""
