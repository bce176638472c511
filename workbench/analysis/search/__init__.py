"""Searches over the pipeline: pattern scans and steps, bisection, reduction, and the
comparison of pipelines."""
