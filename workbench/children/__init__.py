"""The workbench's child processes: the one way to start one and talk to it, and its environment.

``Child`` is a fresh interpreter answering named methods over a socket (the Enzyme-JaX pass worker,
``pipeline.worker``; the XLA probe child, ``pipeline.xla_probe``); ``child_env`` and ``command`` give
every child -- those and the ``jax.distributed`` processes of a multi-process run -- this workbench on
its path and the CPU devices it needs; ``leftovers`` names their logs and removes what dead processes
left in the temporary folder. Nothing here imports the layers above (pipeline, analysis, ...).
"""
from . import leftovers
from .channel import Request, Response, answer_to, ended
from .child import Child, ChildDied, ChildFailed, ChildTimeout, serve
from .env import DEVICE_COUNT_FLAG, child_env, command

__all__ = ["Child", "ChildDied", "ChildFailed", "ChildTimeout", "DEVICE_COUNT_FLAG", "Request", "Response",
           "child_env", "command", "ended", "answer_to", "leftovers", "serve"]
