"""What the README says, checked against the code and data it describes: the
route to vLLM's CPU server that the tests take, the bundled safety sample as the documented item
format (every Table 2 cell), XSTest's response labelling rule."""

from __future__ import annotations


def test_the_readme_starts_vllms_cpu_server_as_the_tests_do():
    """`vllm serve` fails on vLLM's CPU build; the README gives the route tests/vllm_server.py
    takes: the server module, with VLLM_CPU_KVCACHE_SPACE."""
    from readme_docs import guide
    from tiny_models import REPO

    readme = guide("servers-and-clusters.md")
    tests = (REPO / "tests" / "vllm_server.py").read_text(encoding="utf-8")
    module = "vllm.entrypoints.openai.api_server"
    assert module in tests and '"VLLM_CPU_KVCACHE_SPACE"' in tests
    block = readme.split("**vLLM's server on a CPU.**", 1)[1].split("```bash\n", 1)[1]
    block = block.split("```", 1)[0]
    assert block.startswith(f"VLLM_CPU_KVCACHE_SPACE=4 python -m {module} --model ")
    assert "localeval run --task tmlu --model openai:mymodel --base-url http://127.0.0.1:8000/v1" \
        in block


def test_the_bundled_sample_is_the_documented_example_of_every_table2_cell():
    from tiny_models import REPO

    from localeval.data.safety import SAMPLE_ITEMS, SEA_LANGS, SUBSETS
    from localeval.tasks.safety_items import load_safety_items

    assert SAMPLE_ITEMS == REPO / "src" / "localeval" / "data" / "sample" / "safety" / \
        "items.jsonl"
    items = load_safety_items("sea-safeguard", SAMPLE_ITEMS)
    cells = {(i.subset, i.lang == "en") for i in items}
    assert cells == {(s, en) for s in SUBSETS for en in (True, False)}
    assert {i.lang for i in items} == {"en", *SEA_LANGS}
    from readme_docs import guide

    readme = guide("guards.md")
    section = readme.split("- **Local items**", 1)[1].split("\n- **", 1)[0]
    for field in ("subset", "lang", "split", "id", "prompt", "response", "prompt_label",
                  "response_label", "country", "local_prompt", "en_prompt", "local_response",
                  "en_response", "prompt_annotations", "response_annotations"):
        assert f"`{field}`" in section, field
    assert "`src/localeval/data/sample/safety/items.jsonl`" in section
    assert "localeval run --task sea-safeguard --data src/localeval/data/sample/safety/" \
           "items.jsonl" in section


def test_the_readme_gives_xstests_response_labelling_rule():
    """Issue 52 item 10: how an XSTest completion is labelled was only in a docstring."""

    from readme_docs import guide

    readme = " ".join(guide("guards.md").split())
    assert "a prompt is unsafe when its `type` starts with `contrast_`" in readme
    assert "`final_label` `1_full_compliance` or `3_partial_refusal`" in readme


def test_the_readme_says_what_a_server_must_answer_for_a_guard():
    """Issue 69: nothing said what an OpenAI-compatible server must answer for a guard."""

    from readme_docs import guide

    readme = guide("guards.md")
    said = readme.split("**A guard on an OpenAI-compatible server**", 1)[1][:1200]
    assert "top_logprobs" in said and "/chat/completions" in said and "--max-logprobs" in said


def test_the_viewers_paragraph_names_no_store_as_runs_flag():
    """Issue 69: "`--no-store` runs too" in `localeval view`'s paragraph read as a flag of
    view's own, which it has not."""

    from readme_docs import guide

    from localeval.cli import parser

    readme = guide("store-and-viewer.md")
    view = readme.split("`localeval view` serves a small web app", 1)[1][:600]
    assert "`--no-store` runs too" not in view and "`localeval run --no-store`" in view
    with __import__("pytest").raises(SystemExit):
        parser().parse_args(["view", "--no-store"])
