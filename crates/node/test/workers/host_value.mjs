// T16: a host value made in a worker env is the object itself there; stashed natively and
// taken by the main thread, it is a TypeError in the main env (another JS heap).
import { parentPort } from 'node:worker_threads';
import * as tether from '../../index.mjs';

const testing = tether.namespace('testing');

class Payload {}
const o = new Payload();
const sameInWorker = testing.echo(o) === o;
testing.stash('T16-worker', o);
parentPort.postMessage({ sameInWorker });
