"""Writes through the assistant: what it may offer a person, its data tools, the proposals
they store, the confirmation outside the model, and the audit trail."""
