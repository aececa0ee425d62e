"""Dates and times said in text (English and Chinese), grounded one way for messages and questions alike.

``dates`` (the mentions of a sentence, resolved against the message's own local date: ``find_dates``) ·
``rules`` (the expressions and how each resolves) · ``anchors`` (what a rule resolves against) · ``words``
(the mention type, numbers, calendar arithmetic, tense cues) · ``clock`` (times of day) · ``windows`` (a
question's time windows, built on ``find_dates``) · ``bounds`` (overflow-proof window arithmetic).
"""
