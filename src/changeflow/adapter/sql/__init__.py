"""SQL text into plans: statements split and classified, queries and DML planned into the
compute plan language (:mod:`changeflow.compute.plan`)."""
