"""Reproductions of the avent paper's headline results (filled in by issue 8)."""

#: name -> function(*, quick, random_state, progress) -> Reproduction
REPRODUCTIONS = {}
