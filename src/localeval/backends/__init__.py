"""Backends execute Requests. They know nothing of tasks."""

from .base import Backend, Generate, Message, Prompt, Request, Response, ScoreNext, load_backend

__all__ = ["Backend", "Generate", "Message", "Prompt", "Request", "Response", "ScoreNext",
           "load_backend"]
