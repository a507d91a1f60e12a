"""A stored metric's name as a key (issue 71; HELM's ``MetricName`` is the model): its family
(``table2``, ``auprc``, ``subject``, ``average`` …) and the parts that place it (a Table 2
column, a kind / context / subset, a subject). The results store and the Parquet export keep
today's text form, ``family/part/…``, so every store written before reads as it did; this is
the one place that text is taken apart."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MetricName:
    family: str
    parts: tuple[str, ...] = ()

    def __str__(self) -> str:
        return "/".join((self.family, *self.parts))

    @property
    def rest(self) -> str:
        """The parts as one text ("prompt/avg" of ``table2/prompt/avg``)."""
        return "/".join(self.parts)

    @classmethod
    def parse(cls, text: str) -> MetricName:
        """A name as the store holds it; ``str`` of the result is ``text`` again."""
        family, *parts = text.split("/")
        return cls(family, tuple(parts))


def metric(family: str, *parts: str) -> MetricName:
    return MetricName(family, tuple(parts))
