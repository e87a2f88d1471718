"""Closed-form theory of the papers skhybrid implements."""
