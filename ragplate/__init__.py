"""ragplate: documentation intelligence as a data platform."""

__version__ = "0.1.0"
