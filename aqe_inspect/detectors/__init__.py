"""One module per AQE rewrite kind."""
