"""Why AQE did not rewrite: run-time evidence and configs against each Spark rule's conditions."""
