"""Built-in multiple-choice tasks: where their data lives and what each subject is.

TMLU's table is from the TMLU paper (arXiv 2403.20180), Table 2 and Appendix Table 6:
discipline, level (CAP = middle school, GSAT/AST = high school, MOEX/HB = professional),
Chinese name, number of questions (dev + test) and of options.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import LocalevalError
from .subject_tables import CMMLU_SUBJECTS, TMMLUPLUS_SUBJECTS


@dataclass(frozen=True)
class SubjectInfo:
    id: str
    name: str  # name in the benchmark's own language, used by its prompts
    discipline: str
    level: str | None = None
    n_questions: int | None = None
    n_options: int | None = None


@dataclass(frozen=True)
class TaskSpec:
    name: str
    hub_id: str
    dev_split: str  # the few-shot pool
    test_split: str
    subjects: dict[str, SubjectInfo]
    # Disciplines in the column order of the paper's results table.
    disciplines: tuple[str, ...]
    description: str
    # Years before this one are pooled with it in the year breakdown (None: no pooling).
    year_floor: int | None = None
    # The benchmark authors' own prompt format: tmlu (the TMLU paper's; it introduces the
    # questions as Taiwanese exam questions) or lm-eval (lm-evaluation-harness's copy of the
    # CMMLU / TMMLU+ authors' prompt).
    prompt_style: str = "tmlu"
    # The paper table the discipline table reproduces, if any (said in its caption).
    paper_table: str | None = None


_LEVEL = {"CAP": "middle school", "GSAT": "high school", "AST": "high school"}

# (subject id, Chinese name, discipline, # questions, # options)
_TMLU_ROWS = [
    ("AST_civics", "分科測驗公民", "Social Science", 57, 4),
    ("AST_geography", "分科測驗地理", "Social Science", 58, 4),
    ("CAP_civics", "會考公民", "Social Science", 73, 4),
    ("CAP_geography", "會考地理", "Social Science", 45, 4),
    ("GSAT_civics", "學測公民", "Social Science", 73, 4),
    ("GSAT_geography", "學測地理", "Social Science", 49, 4),
    ("accountant", "會計師", "Social Science", 117, 4),
    ("clinical_psychologist", "臨床心理師", "Social Science", 117, 4),
    ("AST_biology", "分科測驗生物", "STEM", 40, 4),
    ("AST_chemistry", "分科測驗化學", "STEM", 34, 5),
    ("AST_mathematics", "分科測驗數學", "STEM", 25, 5),
    ("AST_physics", "分科測驗物理", "STEM", 43, 5),
    ("CAP_biology", "會考生物", "STEM", 27, 4),
    ("CAP_chemistry", "會考化學", "STEM", 27, 4),
    ("CAP_earth_science", "會考地球科學", "STEM", 15, 4),
    ("CAP_mathematics", "會考數學", "STEM", 115, 4),
    ("CAP_physics", "會考物理", "STEM", 15, 4),
    ("GSAT_biology", "學測生物", "STEM", 21, 5),
    ("GSAT_chemistry", "學測化學", "STEM", 29, 5),
    ("GSAT_earth_science", "學測地球科學", "STEM", 24, 5),
    ("GSAT_mathematics", "學測數學", "STEM", 29, 5),
    ("GSAT_physics", "學測物理", "STEM", 24, 5),
    ("AST_chinese", "分科測驗國文", "Humanities", 131, 4),
    ("AST_history", "分科測驗歷史", "Humanities", 56, 4),
    ("CAP_chinese", "會考國文", "Humanities", 61, 4),
    ("CAP_history", "會考歷史", "Humanities", 56, 4),
    ("GSAT_chinese", "學測國文", "Humanities", 97, 4),
    ("GSAT_history", "學測歷史", "Humanities", 85, 4),
    ("tour_guide", "導遊", "Humanities", 99, 4),
    ("tour_leader", "領隊", "Humanities", 145, 4),
    ("lawyer_qualification", "律師資格", "Humanities", 279, 4),
    ("driving_rule", "台灣駕駛規則", "Taiwan Specific", 432, 4),
    ("teacher_qualification", "教師資格", "Taiwan Specific", 75, 4),
    ("taiwan_tourist_resources", "台灣觀光資源", "Taiwan Specific", 50, 4),
    ("basic_traditional_chinese_medicine", "中醫基礎醫學", "Other", 159, 4),
    ("clinical_traditional_chinese_medicine", "中醫針灸", "Other", 79, 4),
    ("nutritionist", "營養師", "Other", 120, 4),
]

TMLU = TaskSpec(
    name="tmlu",
    hub_id="miulab/tmlu",
    dev_split="dev",
    test_split="test",
    subjects={
        sid: SubjectInfo(sid, name, disc, _LEVEL.get(sid.split("_")[0], "professional"), n, k)
        for sid, name, disc, n, k in _TMLU_ROWS
    },
    disciplines=("Social Science", "STEM", "Humanities", "Taiwan Specific", "Other"),
    paper_table="the TMLU paper's Table 3",
    description="TMLU: Taiwanese Mandarin knowledge, 37 subjects, middle school to professional",
    # TMLU §4 (temporal analysis): "Questions from before 2017 (2013-2016) are group with 2017
    # as one subset."
    year_floor=2017,
)

CMMLU = TaskSpec(
    name="cmmlu",
    hub_id="haonan-li/cmmlu",
    dev_split="dev",
    test_split="test",
    subjects={s: SubjectInfo(s, zh, cat, n_options=4) for s, (zh, cat) in CMMLU_SUBJECTS.items()},
    disciplines=("STEM", "Humanities", "Social Science", "Other"),
    description="CMMLU: Chinese (Simplified) knowledge, 67 subjects",
    prompt_style="lm-eval",
)

TMMLUPLUS = TaskSpec(
    name="tmmluplus",
    hub_id="ikala/tmmluplus",
    dev_split="train",  # TMMLU+ calls its 5-question few-shot pool "train"
    test_split="test",
    subjects={
        s: SubjectInfo(s, zh, cat, n_options=4) for s, (zh, cat) in TMMLUPLUS_SUBJECTS.items()
    },
    disciplines=("STEM", "Humanities", "Social Science", "Other"),
    description="TMMLU+: Traditional Chinese knowledge, school to professional subjects",
    prompt_style="lm-eval",
)

BUILTIN_TASKS: dict[str, TaskSpec] = {t.name: t for t in (TMLU, CMMLU, TMMLUPLUS)}


def default_prompt_style(task: str) -> str:
    """The task authors' own format (``TaskSpec.prompt_style``); tmlu for local data."""
    spec = BUILTIN_TASKS.get(task)
    return spec.prompt_style if spec else "tmlu"


def get_task(name: str) -> TaskSpec:
    try:
        return BUILTIN_TASKS[name]
    except KeyError:
        raise LocalevalError(
            f"unknown task {name!r}; built-in tasks: {', '.join(BUILTIN_TASKS)} "
            "(or pass --data PATH for a local folder as a custom task; `localeval tasks` lists them)"
        ) from None


def custom_task(name: str, subjects: list[str]) -> TaskSpec:
    """A task for local data we know nothing about: each subject is its own discipline-less unit."""
    return TaskSpec(
        name=name,
        hub_id="",
        dev_split="dev",
        test_split="test",
        subjects={s: SubjectInfo(s, s.replace("_", " "), "Other") for s in subjects},
        disciplines=("Other",),
        description=f"custom task from local data ({len(subjects)} subjects)",
    )
