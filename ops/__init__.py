"""Operator tools (Kafka bootstrap, produce, lag, replay, delete) and deployment scripts."""
