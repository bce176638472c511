"""Running a stage and checking its numbers: execute, the numeric check, its float64
references, and runs over several processes."""
