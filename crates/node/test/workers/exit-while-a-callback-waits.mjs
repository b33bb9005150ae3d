// T41: process.exit() while a native thread's call of a JS callback waits for this (main) thread.
// `call_in_thread.callAsync` runs on Node's threadpool; its native thread queues the callback for
// the main thread, which is busy and then exits. Node joins its threadpool before the process
// ends, so the queued call must be answered (with an error) at exit or the process hangs. The
// parent checks the exit code.
import * as tether from '../../index.mjs';

const testing = tether.namespace('testing');
testing.call_in_thread.callAsync(() => testing.make_pair(1, 2));
const busyUntil = Date.now() + 300; // the callback is queued meanwhile; this thread never runs it
while (Date.now() < busyUntil);
console.log('exiting');
process.exit(7);
