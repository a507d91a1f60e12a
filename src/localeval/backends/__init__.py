"""Backends execute Requests. They know nothing of tasks."""

from .base import Backend, Generate, Message, Prompt, Request, Response, ScoreNext
from .registry import load_backend, parse_backend_spec

__all__ = ["Backend", "Generate", "Message", "Prompt", "Request", "Response", "ScoreNext",
           "load_backend", "parse_backend_spec"]
