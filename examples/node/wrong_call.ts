// A deliberately wrong call: `tsc --strict` must reject it (the xtask checks that it does, and
// that the error names this file's line 7). Never run.
import { Scene } from 'scene';

const scene = new Scene('world');
// find takes the node's name (a string), not a number:
scene.find(3);
