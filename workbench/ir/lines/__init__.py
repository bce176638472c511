"""A module as the diff reads it: its lines in order, each with its format (names taken out)
and the values it defines and uses, read from MLIR (mlir.py) or XLA HLO text (hlo.py)
into one model (model.py)."""
