"""Documentation query analytics: recording answered questions off the request path,
retention and erasure, and the corpus-gap report."""
