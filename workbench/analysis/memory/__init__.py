"""Where the bytes go: the peak of XLA's schedule, what is live at it, and which of the user's lines put it there
(``view.Memory``; the module's text says how it is read)."""
from .change import MemoryChange
from .view import BUFFER_COLUMNS, LINE_COLUMNS, Memory, memory_of, space_name, user_line

__all__ = ["BUFFER_COLUMNS", "LINE_COLUMNS", "Memory", "MemoryChange", "memory_of", "space_name", "user_line"]
