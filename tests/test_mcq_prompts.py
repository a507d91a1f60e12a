"""Multiple-choice prompts and requests as the authors' code builds them
(tasks/prompts.py, tasks/prompt_styles.py; MiuLab/TMLU ``07200b3``, lm-evaluation-harness 0.4.13):
every shot kept by default, the chat template's BOS, each subject's fixed choices, and
``--max-length`` cutting the context from the left as MiuLab's ``encode_pair``; a folder made
under older defaults is a run with other settings."""

from __future__ import annotations

import json

import pytest

from localeval import evaluate
from localeval.data.items import MCQItem


def test_tmlu_keeps_every_shot_by_default():
    from localeval.data.catalog import TMMLUPLUS
    from localeval.tasks.mcq import MCQConfig, plan
    from localeval.tasks.prompts import PromptConfig

    dev = [MCQItem(str(i), "economics", "很長的問題" * 60, ("甲", "乙", "丙", "丁"), "A")
           for i in range(5)]
    test = [MCQItem("9", "economics", "問題", ("甲", "乙", "丙", "丁"), "A")]
    # MiuLab tmlu_eval.py: without --reduce_few_shot format_problem adds all few_shot_num
    # shots, and HFLM_vLLM.generate cuts nothing: 5 shots, though the prompt is over 260.
    for style in ("tmlu", "lm-eval"):
        config = MCQConfig(prompt=PromptConfig(style=style, task="tmmluplus"))
        (p,) = plan(TMMLUPLUS, "economics", dev, test, config, lambda prompt: len(prompt), 260)
        assert (p.n_shots, p.skipped) == (5, ())


def test_a_folder_made_under_older_defaults_is_a_run_with_other_settings(tmp_path):

    from offline_runs import safeguard_run

    from localeval.errors import LocalevalError

    folder = tmp_path / "run"
    safeguard_run(folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    assert (config["protocol"], config["threshold_grid"], config["sensitive"]) == \
        ("fidelity-5", "iris", "iris")
    # what a run made before issue 34 recorded: no protocol, no grid, the §3 label policy
    old = {k: v for k, v in config.items() if k not in ("protocol", "threshold_grid")}
    (folder / "config.json").write_text(json.dumps({**old, "sensitive": "paper"}),
                                        encoding="utf-8")
    with pytest.raises(LocalevalError, match="holds a run with other settings") as e:
        safeguard_run(folder)
    assert "protocol: None -> 'fidelity-5'" in str(e.value)
    assert "sensitive: 'paper' -> 'iris'" in str(e.value)


def _llama2_style_tokenizer():
    """The shared byte-level BPE with what Llama-2/Mistral tokenizers have: a post-processor
    that adds BOS, and a chat template whose text starts with {{ bos_token }}."""
    import transformers
    from tiny_models import TOKENIZER_JSON
    from tokenizers.processors import TemplateProcessing

    tok = transformers.PreTrainedTokenizerFast(tokenizer_file=str(TOKENIZER_JSON),
                                               bos_token="<|endoftext|>", eos_token="<|im_end|>")
    tok._tokenizer.post_processor = TemplateProcessing(
        single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", tok.bos_token_id)])
    tok.chat_template = ("{{ bos_token }}{% for m in messages %}[INST] {{ m['content'] }} "
                         "[/INST]{% endfor %}")
    return tok


def test_tmlu_chat_generation_has_miulab_double_bos():
    """MiuLab model.py HFLM_vLLM.generate (--apply_chat_template): apply_chat_template(
    tokenize=False) + '正確答案：(' is a string, and vLLM's LLM.generate tokenises a string with
    special tokens: the template's BOS text, then the tokenizer's BOS: two."""
    from localeval.backends.prompt_tokens import generation_text
    from localeval.data.catalog import TMMLUPLUS
    from localeval.tasks.mcq import MCQConfig, plan
    from localeval.tasks.prompts import PromptConfig

    tok = _llama2_style_tokenizer()
    test = [MCQItem("9", "economics", "問題", ("甲", "乙", "丙", "丁"), "A")]
    bos = tok.bos_token_id
    for special, expected in ((True, [bos, bos]), (False, [bos])):
        config = MCQConfig(method="generation", chat_special_tokens=special,
                           prompt=PromptConfig(shots=0, chat="single", task="tmmluplus"))
        (p,) = plan(TMMLUPLUS, "economics", [], test, config, None, None)
        text, add = generation_text(tok, p.request, "m")
        ids = tok(text, add_special_tokens=add)["input_ids"]
        assert ids[:len(expected)] == expected and ids[len(expected)] != bos


def test_lm_eval_tmlu_scores_each_subjects_fixed_choices():
    """lm-eval 0.4.13 tasks/tmlu/default: tmlu_driving_rule.yaml doc_to_choice [A, B, C, D],
    tmlu_GSAT_biology.yaml [A, B, C, D, E]; api/task.py process_results takes the argmax over
    those and scores a gold letter outside them as -100 (never right)."""
    from localeval.backends.base import NextLogprobs
    from localeval.data.catalog import TMLU
    from localeval.tasks.mcq import MCQConfig, plan, score
    from localeval.tasks.prompts import PromptConfig

    config = MCQConfig(prompt=PromptConfig(style="lm-eval", shots=0, task="tmlu"))
    five = MCQItem("1", "driving_rule", "問題", ("甲", "乙", "丙", "丁", "戊"), "E")
    four = MCQItem("2", "GSAT_biology", "問題", ("甲", "乙", "丙", "丁"), "A")
    (p5,) = plan(TMLU, "driving_rule", [], [five], config, None, None)
    (p4,) = plan(TMLU, "GSAT_biology", [], [four], config, None, None)
    assert p5.request.candidates == (" A", " B", " C", " D")
    assert p4.request.candidates == (" A", " B", " C", " D", " E")
    # "E" is the question's fifth option and its gold, but not among lm-eval's choices
    s = score(p5, NextLogprobs(logprobs={" A": -3.0, " B": -1.0, " C": -2.0, " D": -4.0}), config)
    assert (s["pred"], s["correct"]) == ("B", False)
    # a choice that is not an option of this question can still win, and is wrong
    s = score(p4, NextLogprobs(logprobs={" A": -3.0, " B": -4.0, " C": -5.0, " D": -6.0,
                                         " E": -1.0}), config)
    assert (s["pred"], s["correct"]) == ("E", False)
    own = MCQConfig(prompt=PromptConfig(style="lm-eval", shots=0, task="tmlu",
                                        lm_eval_choices="own"))
    assert plan(TMLU, "driving_rule", [], [five], own, None, None)[0].request.candidates == \
        (" A", " B", " C", " D", " E")


def test_max_length_cuts_the_context_from_the_left_as_miulab_encode_pair(tiny_llama):
    """MiuLab model.py HFLM_transformers.encode_pair: whole = encode(context + "A"), ctx =
    encode(context), conti = whole[len(ctx):] (one token, "A"), ctx = ctx[-(max_length -
    len(conti)):]: with --max-length 8 the model sees the last 7 context tokens, then reads "A"
    (add_special_tokens=False throughout, as HFLM_transformers.encode)."""
    import transformers

    from localeval.backends.base import ScoreNext
    from localeval.backends.prompt_tokens import score_tokens

    tok = transformers.AutoTokenizer.from_pretrained(tiny_llama)
    prompt = "以下選擇題為出自臺灣的考題，答案為其中一個選項。\n\n問題：1+1=?\n正確答案：("
    full = tok.encode(prompt, add_special_tokens=False)
    whole = tok.encode(prompt + "A", add_special_tokens=False)
    assert len(full) > 8 and len(whole) == len(full) + 1  # the letter is one token
    ctx, targets = score_tokens(tok, ScoreNext(prompt, ("A", "B"), add_special_tokens=False,
                                               max_length=8), "tiny")
    assert ctx == full[-7:] and targets[0] == whole[-1]
    assert score_tokens(tok, ScoreNext(prompt, ("A", "B"), add_special_tokens=False),
                        "tiny")[0] == full  # default: nothing cut


def test_max_length_reaches_the_request_and_config(tiny_llama, tmp_path):
    from localeval.demo.mcq import SAMPLE_MCQ

    record = evaluate(task="tmlu", model=f"hf:{tiny_llama}", data=SAMPLE_MCQ,
                      subjects=["CAP_mathematics"], limit=2, max_length=20,
                      output=tmp_path / "run", quiet=True, store=False)
    assert record.config["max_length"] == 20
    assert record.results["usage"]["model"].prompt_tokens == 2 * 19  # two prompts cut to 19


@pytest.mark.parametrize("argv, words", [
    (["--max-length", "20", "--method", "generation"], "needs --method likelihood"),
    (["--max-length", "1"], "at least 2"),
    (["--max-length", "20", "--prompt-style", "lm-eval"], "use it with --prompt-style tmlu"),
    (["--stop-at", "budget"], "needs --method generation"),
])
def test_max_length_and_stop_at_refusals_are_one_line(argv, words, model_folder, no_model_load,
                                                      capsys):
    from localeval.cli import main

    assert main(["run", "--task", "tmlu", "--model", model_folder, *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


def test_max_length_on_a_server_is_refused_in_one_line(tmp_path):
    from scripted_server import ScriptedServer

    from localeval.demo.mcq import SAMPLE_MCQ
    from localeval.errors import LocalevalError

    with ScriptedServer(lambda path, body: b"{}") as server, \
            pytest.raises(LocalevalError, match="use a local backend"):
        evaluate(task="tmlu", model="openai:m", data=SAMPLE_MCQ, subjects=["CAP_mathematics"],
                 limit=1, max_length=20, output=tmp_path / "run", quiet=True, store=False,
                 backend_options={"base_url": server.url, "max_retries": 0})
    assert not [p for p, _ in server.posts if p.endswith("completions")]
