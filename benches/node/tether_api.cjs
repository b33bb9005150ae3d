// Adapts tether-ffi's public Node API to the names the bench uses (testing.echo, ...).
'use strict';

exports.testing = function testing(tether) {
  const t = tether.namespace('testing');
  for (const name of ['echo', 'make_pair', 'add3', 'call', 'Pair']) {
    if (t[name] === undefined) throw new Error(`tether-ffi has no testing.${name}`);
  }
  return t;
};
