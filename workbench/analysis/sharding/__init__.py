"""What a sharded program holds: value shardings and the collectives between devices."""
