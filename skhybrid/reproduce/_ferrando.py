"""Reproductions of the ferrando paper's headline results (filled in by issue 8)."""

#: name -> function(*, quick, random_state, progress) -> Reproduction
REPRODUCTIONS = {}
