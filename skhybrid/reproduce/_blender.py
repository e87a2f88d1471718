"""Reproductions of the blender paper's headline results (filled in by issue 8)."""

#: name -> function(*, quick, random_state, progress) -> Reproduction
REPRODUCTIONS = {}
