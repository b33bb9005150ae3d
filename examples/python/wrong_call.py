"""A deliberately wrong call: `mypy --strict` must reject it (the xtask checks that it does,
and that the error names this file's line 8). Never run."""

from scene import Scene

scene = Scene("world")
# find takes the node's name (a str), not an int:
scene.find(3)
