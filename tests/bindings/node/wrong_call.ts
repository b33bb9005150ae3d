// A deliberately wrong use of the sample plugin's generated declarations: `tsc --strict` must
// reject it (cargo xtask test checks that it does, naming this file's line 9). Never run.
import { Names } from 'sample';

const names = new Names('abc');
// import_ returns `number | bigint | null` (the plugin's Optional[int], None without a label):
// its result must be checked for null before it is used as a number.
// WRONG on the next line: null is not assignable to number | bigint.
const length: number | bigint = names.import_(2);
console.log(length);
