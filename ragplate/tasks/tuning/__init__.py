"""Tuning: the fusion grid, the tuner and its guards, the tuning report and the fusion
ceiling."""
