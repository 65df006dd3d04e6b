"""Reference models used as test oracles; not for production use.

Each oracle is the plainest correct version of an optimised part, kept small enough to check
by reading; tests compare the optimised part with it on randomised inputs, and benchmarks
measure the part side by side with it. This package is the one home for oracles that only
tests and benchmarks use:

- :mod:`changeflow.testing.correction`: ``CorrectionReference``, a dict from time to updates,
  the oracle of :class:`changeflow.compute.correction.Correction`.

It also holds :mod:`changeflow.testing.cluster`, which starts a Spark standalone cluster on
127.0.0.1 for the cluster tests and the cluster benchmark.

Two more oracles are product code and stay where they are, because the product uses them too:
the plain partial TVC in :mod:`changeflow.collection` (append, compact, read) and the
single-threaded CDC v2 reader in :mod:`changeflow.cdc.reader`, the oracle of the Spark reader.
"""
