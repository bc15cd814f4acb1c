"""Scoring heads, one module each; every module registers its heads (``scoring.registry``) on import."""
