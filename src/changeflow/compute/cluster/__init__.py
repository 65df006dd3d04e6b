"""The cluster tier: a dataflow whose arrangements live on the Spark executors.

A view's stateful operators (joins, reduces, distinct, threshold, top-k) keep their input
collections as :class:`~changeflow.compute.cluster.spine.Spine` s: consolidated batches written
as Parquet under the blob root by the executors and cached there, merged geometrically as
differential dataflow's spines are. A step turns the inputs' small deltas (the only data the
driver holds, besides the output's changes) into the output's delta with Spark jobs
(:mod:`~changeflow.compute.cluster.deltas`); hydration is the same step from empty state.
"""
